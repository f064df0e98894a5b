"""A test figure module (tests/report) that raises after writing a paragraph:
the report still gets written, shows the traceback, and weft-report exits 1."""
ORDER = 8
TITLE = "Test figure: a module that raises"
SECTIONS = ["fake"]


def render(fig):
    fig.text("BEFORE-RAISE-MARKER")
    raise RuntimeError("RAISE-MARKER deliberate failure")
