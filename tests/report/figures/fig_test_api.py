"""A test figure module (tests/report): calls every Figure API once, on the
rows of the synthetic section `fake` in tests/report/results.json."""
import math

ORDER = 5
TITLE = "Test figure: the Figure API"
PAPER = "no paper (tests/report/figures/fig_test_api.py)"
SECTIONS = ["fake"]


def render(fig):
    rows = fig.rows(section="^fake$", name=r"^widget ", params=None)
    assert [r.name for r in rows] == ["widget A", "widget B", "widget C"], rows
    a, b, c = rows
    assert a.value == 2.0 and a.unit == "s" and a.samples == [2.0, 2.5, 1.9], a
    assert a.note == "note of A" and not a.failed and a.ok
    assert math.isnan(c.value) and c.failed and not c.ok, c
    assert fig.rows(section="fake", params=r"workers=2") == [b, c]
    assert fig.row("fake", "widget A", "workers=1") is a
    assert fig.row("fake", "no such row") is None
    assert fig.mode == "quick" and fig.machine["cpus"] == 2
    fig.text("TEXT-MARKER: a *markdown* paragraph from the test module.")
    fig.rows_table([a, b, c])
    fig.table(["what", "paper", "weft"], [["CELL-MARKER ratio", "1.5x", b.value / a.value],
                                           ["pipe | escaped", 3, float("nan")]])
    f, ax = fig.plot()
    ax.bar([r.name for r in (a, b)], [r.value for r in (a, b)])
    ax.set_ylabel("AXIS-MARKER seconds")
    name = fig.save(f, "CAPTION-MARKER: widgets A and B")
    assert name == "fig_test_api_1.svg", name
    f, axes = fig.plot(ncols=2)
    axes[0].plot([1, 2, 3], [1, 4, 9])
    axes[1].plot([1, 2, 3], [9, 4, 1])
    fig.save(f, "second plot")


