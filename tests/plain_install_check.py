"""What `test_plain_install.py` runs with the python of a fresh plain install (no dev extra, no pytest there).

    python tests/plain_install_check.py OUT.json

Writes to OUT.json the file numcook was imported from, `helps()` (every command's and subcommand's --help), the
package's modules and those that failed to import (name -> the error)."""
import contextlib, importlib, io, json, pkgutil, re, sys


def help_of(argv: list[str]) -> tuple[int, str]:
    "The exit status and the text of `numcook ARGV --help`, run in this process."
    from numcook.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try: rc = main([*argv, '--help'])
        except SystemExit as e: rc = e.code
    return rc, out.getvalue()


def helps() -> dict[str, tuple[int, str]]:
    "'nupa generate' -> (status, text) of its --help: every command of `numcook.cli.COMMANDS`, and every subcommand its usage line names."
    from numcook.cli import COMMANDS
    out, todo = {}, [[c] for c in COMMANDS]
    while todo:
        argv = todo.pop(0)
        rc, text = out[' '.join(argv)] = help_of(argv)
        usage = text.split('\n\n')[0]      # `usage: numcook nupa [-h] {list,generate,score} ...`
        if len(argv) == 1 and (m := re.search(r'\{([\w,-]+)\} \.\.\.', usage)): todo += [[*argv, s] for s in m.group(1).split(',')]
    return out


def import_all() -> tuple[list[str], dict[str, str]]:
    "Every module of the package, and those that fail to import (name -> the error)."
    import numcook
    names = sorted(m.name for m in pkgutil.walk_packages(numcook.__path__, 'numcook.'))
    failed = {}
    for m in names:
        try: importlib.import_module(m)
        except Exception as e: failed[m] = f'{type(e).__name__}: {e}'
    return names, failed


if __name__ == '__main__':
    import numcook
    report = {'file': numcook.__file__, 'helps': helps()}
    report['modules'], report['failed'] = import_all()
    with open(sys.argv[1], 'w') as f: json.dump(report, f)
