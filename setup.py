"""Package metadata comes from settings.ini, the single source shared with nbdev."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

cfg = ConfigParser(delimiters=["="])
cfg.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = cfg["DEFAULT"]

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=Path("README.md").read_text(encoding="utf-8") if Path("README.md").exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    keywords=cfg["keywords"].split(),
    url=cfg["git_url"],
    project_urls={"Documentation": cfg["doc_host"] + cfg["doc_baseurl"]},
    classifiers=["Programming Language :: Python :: 3", "Intended Audience :: Science/Research",
                 "Topic :: Scientific/Engineering :: Artificial Intelligence"],
    python_requires=f">={cfg['min_python']}",
    packages=setuptools.find_packages(include=[cfg["lib_name"], cfg["lib_name"] + ".*"]),
    include_package_data=True,
    install_requires=cfg["requirements"].split(),
    extras_require={"dev": cfg["dev_requirements"].split()},
    entry_points={"console_scripts": cfg["console_scripts"].split(),
                  "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
