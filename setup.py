"""setuptools' build, plus one step: the simulation engine is compiled into the package when
hpcdispatch is built (``pip install .``, a wheel), so that its first run does not compile it:
into numba's disk cache and, ahead of time, into an extension module that runs without numba
(``src/hpcdispatch/compiled/install_time.py``, ``compiled/aot.py``; an editable install
compiles on its first run, into ``src/hpcdispatch/compiled/engine/``). Everything else is in
``pyproject.toml``."""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


class BuildPyWithEngine(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        script = Path(self.build_lib, "hpcdispatch", "compiled", "install_time.py")
        env = {
            k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")
        }
        subprocess.run([sys.executable, str(script), self.build_lib], check=True, env=env)


class BinaryDistribution(Distribution):
    """The package holds a compiled extension module (the engine compiled ahead of time): its
    wheel is tagged for this interpreter and platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithEngine}, distclass=BinaryDistribution)
