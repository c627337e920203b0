import sys

from playground.errors import PlaygroundError

try:  # the limits read the environment as they are imported: a bad PLAYGROUND_* is one line, not a traceback
    from playground.cli import main
except PlaygroundError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)

sys.exit(main())
