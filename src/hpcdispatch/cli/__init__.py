"""The ``hpcdispatch`` command line.

Its face is :func:`cli`, the click group (``click.testing.CliRunner().invoke(cli, [...])``);
the installed command runs ``hpcdispatch.cli.main:main``, which turns errors into one line.
"""

from hpcdispatch.cli.main import cli

__all__ = ["cli"]
