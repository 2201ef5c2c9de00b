"""The ``hpcdispatch`` command line."""
