"""python -m release: build, publish, sign, verify and pin the platform's own artifacts.

    python -m release lock                       re-resolve release/*.lock from the pins
    python -m release all [--registry HOST/PATH] [--key cosign.key]
                                                 everything below, in order (make release)
    python -m release build                      wheel, sdist, images, chart, bundle -> build/release
    python -m release publish --registry R       push by digest, pull back, check every digest
    python -m release sign --registry R --key K  cosign signatures and SBOM attestations
    python -m release verify --registry R --key PUB
    python -m release pin [--repository REPO]    the images' digests -> components/versions.yaml

Without --registry, ``all`` starts a registry on loopback (build/release/registry) and signs with a
throwaway key pair (build/release/keys): everything a release does, checked, without publishing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from release import steps
from release.run import PROJECT, ReleaseError
from release.spec import DEFAULT_REPOSITORY

OUT = PROJECT / "build" / "release"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("lock", help="re-resolve release/requirements.lock and release/mlserver.lock")
    build = sub.add_parser("build", help="build every artifact into --out")
    build.add_argument(
        "--only", action="append", choices=steps.IMAGES + steps.EXTRA_IMAGES, help="only these images (repeatable)"
    )
    build.add_argument("--refresh-base", action="store_true", help="rebuild the Debian root filesystem")
    for name in ("publish", "sign", "verify", "pin", "all"):
        p = sub.add_parser(name)
        p.add_argument("--registry", help="host[:port]/path to push to (default with all: a loopback registry)")
        p.add_argument("--repository", help=f"what the pins name (default: --registry, else {DEFAULT_REPOSITORY})")
        if name in ("sign", "verify", "all"):
            p.add_argument("--key", type=Path, help="cosign private key (sign, all) or public key (verify)")
        if name == "all":
            p.add_argument("--only", action="append", choices=steps.IMAGES)
    args = parser.parse_args(argv)
    try:
        steps.run(args.command, args)
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
