"""Which packages the distribution holds (pyproject.toml has the rest of its metadata).

Besides the `tether` packages under src/, three repository folders ship inside the package, so
that an installed Tether has them too: `examples/` as `tether/examples` (what `tether init`
copies), `skills/` as `tether/skills` (the agent skill) and `docs/` as `tether/docs` (served as
MCP resources). `tether.shipped` finds them in either place.
"""

from setuptools import find_namespace_packages, setup

SHIPPED = {"examples": ("*",), "skills": ("*.md",), "docs": ("*.md",)}

packages = find_namespace_packages("src", include=["tether", "tether.*"], exclude=["*.__pycache__"])
package_dir = {"": "src"}
package_data = {"tether": ["py.typed", "**/*.yaml", "**/*.json", "**/*.md", "viewer/static/*"]}
for folder, patterns in SHIPPED.items():
    top = f"tether.{folder}"
    package_dir[top] = folder
    for sub in ["", *find_namespace_packages(folder, exclude=["*.__pycache__"])]:
        name = f"{top}.{sub}" if sub else top
        packages.append(name)
        package_data[name] = list(patterns)

setup(
    packages=packages,
    package_dir=package_dir,
    package_data=package_data,
    # The sdist's docs carry the viewer's screenshot; the installed docs are text only.
    exclude_package_data={"tether.docs": ["*.png"]},
)
