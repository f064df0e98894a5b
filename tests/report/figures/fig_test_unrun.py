"""A test figure module (tests/report) whose section is not in the results:
the framework reports it as not measured without calling render."""
ORDER = 7
TITLE = "Test figure: section not run"
SECTIONS = ["nosuchsection"]


def render(fig):
    raise AssertionError("render() must not be called when no SECTIONS row exists")
