"""Print the requirements of chatmon's extras named on the command line, one per line, from
pyproject.toml (``chatmon[...]`` self-references resolved), so that an image build installs the
dependencies in a layer of their own, before the code: ``python requirements.py pyproject.toml
nlp kafka``."""

import re
import sys
import tomllib


def requirements(project: dict, extras: list[str]) -> list[str]:
    out = list(project["dependencies"])
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in project["optional-dependencies"][extra]:
            own = re.fullmatch(r"chatmon\[(.+)\]", req.replace(" ", ""))
            if own:
                todo += own.group(1).split(",")
            else:
                out.append(req)
    return sorted(dict.fromkeys(out))


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as fh:
        print("\n".join(requirements(tomllib.load(fh)["project"], sys.argv[2:])))
