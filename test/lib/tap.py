"""The "ok N - ..." / "not ok N - ..." lines of the Python suites
(test/keymove, test/stress): report() each check, finish() at the end."""
checks = 0
failures = 0


def report(ok, what):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
    print(f"{'ok' if ok else 'not ok'} {checks} - {what}", flush=True)


def finish():
    """Prints the summary; returns the exit status."""
    print(f"# {checks - failures} of {checks} checks passed")
    return 1 if failures else 0
