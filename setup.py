"""The build step pyproject.toml cannot say: repository folders that ship inside the package.

Three top-level folders of the repository are copied into the built package, so that an
installed Tether has them too: `examples/` as `tether/examples` (what `tether init` writes out),
`skills/` as `tether/skills` (the agent skill) and `docs/` as `tether/docs` (text only; served
as MCP resources). An editable install reads them from the checkout instead (`tether.shipped`
looks in both places), and keeps a plain path in its .pth file, so start-up pays nothing for it.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = {"examples": "*", "skills": "*.md", "docs": "*.md"}


class BuildWithShipped(build_py):
    """`build_py`, then the shipped folders copied under `tether/` in the build."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for folder, pattern in SHIPPED.items():
            for path in sorted(Path(folder).rglob(pattern)):
                if path.is_file() and "__pycache__" not in path.parts:
                    target = Path(self.build_lib, "tether", path)
                    self.mkpath(str(target.parent))
                    self.copy_file(str(path), str(target))


setup(cmdclass={"build_py": BuildWithShipped})
