"""``python -m hpcdispatch`` is the same as the ``hpcdispatch`` command."""

from hpcdispatch.cli.main import main

main()
