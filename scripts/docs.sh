#!/usr/bin/env bash
# docs.sh: `make docs`. Builds the docs site into target/docs/html and checks
# every link in it that stays inside the site:
#   - the Sphinx pages of docs/ (MyST Markdown; warnings are errors): the
#     overview, a page per language, the guides, the reference pages, the
#     protocol, the C header and the Python API (autodoc of the package
#     installed by `make python-install`);
#   - rustdoc of zklock-core (html/rustdoc) and TypeDoc of the Node package's
#     index.d.ts and metrics.d.ts (html/typedoc);
#   - LinkChecker over the whole site: every internal link and anchor must
#     resolve (external links are not fetched: no network in CI).
# The tools come pinned from docs/requirements.txt into target/docs-venv
# and from bindings/node/package.json (TypeDoc).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/docs-venv"
out="$root/target/docs/html"
cd "$root"

scripts/venv.sh "$venv" docs/requirements.txt
rm -rf "$out"
"$venv/bin/sphinx-build" -q -W --keep-going -b html docs "$out"

cargo doc --no-deps --locked -p zklock-core --quiet
cp -r target/doc "$out/rustdoc"
# The docs of other crates' blanket impls, which rustdoc copies onto every
# type's page, carry intra-doc links it does not resolve across crates:
# tracing's (Instrument, WithSubscriber: href="super::Subscriber",
# "crate::Span", "dispatcher#..."), futures-core's on a `Future`
# (`PendingAcquire`: TryFuture's "TryFuture::Ok", "std::future::Future"). A
# real link never has `::` in its href: not ours to fix, those links become
# plain text.
"$venv/bin/python" - "$out/rustdoc" <<'PY'
import pathlib, re, sys
link = re.compile(r'<a href="(?:[A-Za-z_][A-Za-z0-9_]*::|dispatcher#)[^"]*">(.*?)</a>')
for page in pathlib.Path(sys.argv[1]).rglob("*.html"):
    text = page.read_text()
    fixed = link.sub(r"\1", text)
    if fixed != text:
        page.write_text(fixed)
PY

(cd bindings/node && node_modules/.bin/typedoc --logLevel Warn --treatWarningsAsErrors \
  --entryPoints index.d.ts --entryPoints metrics.d.ts --tsconfig test/tsconfig.json --out "$out/typedoc" --name "zklock for Node" \
  --readme none --disableSources)

# LinkChecker reads the files (no server); --check-extern is off, so
# http(s) links are listed, not fetched.
# Anchors (#...) are checked on the Sphinx pages (docs/linkcheckerrc);
# rustdoc and TypeDoc, thousands of anchors in large generated pages, get
# their links checked without anchors (with them it takes many minutes).
"$venv/bin/linkchecker" --no-status -f docs/linkcheckerrc \
  --no-follow-url '/(rustdoc|typedoc)/' "$out/index.html"
"$venv/bin/linkchecker" --no-status --no-warnings "$out/rustdoc/zklock_core/index.html" "$out/typedoc/index.html"
echo "docs: $out/index.html ($(find "$out" -name '*.html' | wc -l) pages, links checked)"
