"""A test figure module (tests/report): its section was not run, and another
that says itself why it cannot draw."""
ORDER = 6
TITLE = "Test figure: not measured"
PAPER = "no paper"
SECTIONS = ["fake"]


def render(fig):
    if not fig.rows(section="fake", name="^gadget"):
        fig.missing("MISSING-MARKER the gadget rows were not run")
        return
    raise AssertionError("the synthetic results have no gadget rows")
