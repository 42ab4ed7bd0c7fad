"""`python -m wheelfarm` runs the CLI."""

from wheelfarm.cli import main

raise SystemExit(main())
