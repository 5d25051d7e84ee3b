"""The whole book as one PDF, offline: every page of the built site, in the order of the table of
contents, gathered into one page and printed with the headless Chromium of the browser check.

    .venv/bin/python scripts/book_pdf.py [--site _build/html] [--out _build/pdf/book.pdf]

The built site is served on localhost; nothing else is fetched. Each page's article is appended
to the first chapter's page (which loads MathJax), the maths is typeset once more, every picture
is loaded, and the result is printed with the book's print stylesheet (course.css): sidebars
and header hidden, code wrapped, an interactive figure printed with the frame its sliders
show when the page opens. Prints the number of pages.

The PDF is also copied into the site (``_downloads/book.pdf``) and linked from every page's
download menu and from the landing page: the site links the PDF that ``make pdf`` built, and
no page links a PDF that was not built.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import re
import sys
import threading
from pathlib import Path

from toc import toc_pages  # scripts/toc.py: the pages of _toc.yml in reading order

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

GATHER = """async (paths) => {
  const article = document.querySelector('article.bd-article');
  article.innerHTML = '';
  for (const path of paths) {
    const url = new URL(path, location.origin + '/');
    const text = await (await fetch(url)).text();
    const doc = new DOMParser().parseFromString(text, 'text/html');
    const part = doc.querySelector('article.bd-article');
    if (!part) throw new Error('no article in ' + path);
    part.querySelectorAll('script').forEach(s => s.remove());
    part.querySelectorAll('img').forEach(img => {
      const src = img.getAttribute('src') || img.getAttribute('data-src');
      if (src && !src.startsWith('data:')) img.setAttribute('src', new URL(src, url).href);
      img.removeAttribute('data-src');
      img.setAttribute('loading', 'eager');
    });
    part.querySelectorAll('a[href]').forEach(a => a.setAttribute('href', new URL(a.getAttribute('href'), url).href));
    part.querySelectorAll('source[srcset]').forEach(s =>
      s.setAttribute('srcset', new URL(s.getAttribute('srcset'), url).href));
    const section = document.createElement('section');
    section.className = 'cu-pdf-part';
    section.style.breakBefore = 'page';
    section.append(...part.childNodes);
    article.append(section);
  }
  if (window.MathJax && MathJax.typesetPromise) await MathJax.typesetPromise([article]);
  await Promise.all(Array.from(document.images).map(i => i.complete ? null
      : new Promise(r => { i.onload = r; i.onerror = r; })));
  return document.images.length;
}"""


def page_count(pdf: bytes) -> int:
    """Number of pages of a PDF written by Chromium (one /Type /Page object per page)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").exists():
        print(f"{args.site}/index.html is missing: build the book first (make book)", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *a: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(args.site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pages = toc_pages()
    host = next(p for p in pages if p.startswith("chapters/"))  # a page that loads MathJax
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            outside: list[str] = []
            page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((base, "data:")) else None)
            page.goto(f"{base}/{host}", wait_until="networkidle")
            page.wait_for_function("window.MathJax && MathJax.typesetPromise", timeout=30_000)
            page.evaluate(GATHER, pages)
            page.wait_for_load_state("networkidle")
            page.emulate_media(media="print")
            title = page.evaluate("document.title = document.querySelector('meta[property=\"og:site_name\"]')"
                                  "?.content || document.title.split('—').pop().trim()")
            pdf = page.pdf(format="A4", print_background=True, display_header_footer=True,
                           header_template="<span></span>",
                           footer_template='<div style="font-size:8px;width:100%;text-align:center">'
                                           '<span class="pageNumber"></span></div>',
                           margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"})
            browser.close()
    finally:
        server.shutdown()
    if outside:
        print(f"requests outside the site while printing: {outside[:3]}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(pdf)
    linked = publish(pdf, args.site)
    print(f"{args.out}: {page_count(pdf)} pages, {len(pdf) / 2**20:.1f} MiB, {len(pages)} documents ({title}); "
          f"linked from {linked} pages")
    return 0


def publish(pdf: bytes, site: Path) -> int:
    """Copy the PDF into the site and link it from every page (book/_ext/offline_site.pdf_links)."""
    from pathlib import PurePosixPath

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from offline_site import BOOK_PDF, pdf_links

    target = site / BOOK_PDF
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(pdf)
    linked = 0
    for path in sorted(site.rglob("*.html")):
        page = PurePosixPath(path.relative_to(site).as_posix())
        if page.parts[0] in ("_static", "_sources", "_images"):
            continue
        text = path.read_text(encoding="utf-8")
        new = pdf_links(text, page, site)
        if new != text:
            path.write_text(new, encoding="utf-8")
            linked += 1
    return linked


if __name__ == "__main__":
    sys.exit(main())
