"""The examples' output: "ok - ..." lines, and exit 1 on the first failed
expectation. Shared by the Python examples."""
import sys

from fencing_errors import StaleToken


def ok(what, cond=True, got=None):
    print(f"{'ok' if cond else 'not ok'} - {what}" + ("" if cond or got is None else f": got {got!r}"))
    if not cond:
        sys.exit(1)


def expect_stale(what, action):
    """Runs action, which must raise StaleToken; returns it."""
    try:
        action()
    except StaleToken as e:
        return e
    ok(f"{what} refused", False)
