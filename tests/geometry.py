"""What a reader sees, measured from the page's own geometry in a real browser: every text
(SVG ``<text>`` of plotly figures: titles, tick labels, legends, axis titles, annotations,
colour bars; and the HTML text of the card) must lie whole inside its card, inside the SVG that
draws it and inside any clip path that applies to it, and no two texts of a card may overlap.
Texts are measured as the quads they occupy on screen (``getBBox`` through ``getScreenCTM``), so
rotated tick labels are measured as drawn, not as their axis-aligned boxes.

Also: the page never scrolls sideways, cards do not overlap, and every plot area of a figure
keeps a usable size. Text inside a horizontally scrolling container (a wide table on a phone)
is reachable by scrolling, so it is not counted as clipped; the container itself must fit. Text
the browser cuts with an ellipsis (``text-overflow``, ``line-clamp``) counts as the box it shows,
and must carry its whole text on hover (a ``title``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.browser import Chromium

Point = tuple[float, float]
SLACK = 1.0  # px: anti-aliasing and sub-pixel rounding
MIN_PLOT_PX = 40

MEASURE = r"""
((selector) => {
  const corners = (b, m) => [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
    [b.x, b.y + b.height]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  const box = r => [r.left, r.top, r.right, r.bottom];
  const shown = el => { const s = getComputedStyle(el);
    return s.display !== 'none' && s.visibility !== 'hidden' && parseFloat(s.opacity) > 0; };
  const visibleChain = el => { for (let a = el; a && a.nodeType === 1; a = a.parentElement)
    if (!shown(a)) return false; return true; };
  const clipOf = el => {
    for (let a = el.parentElement; a && !(a instanceof HTMLElement); a = a.parentElement) {
      const ref = a.getAttribute('clip-path');
      const id = ref && (ref.match(/#([^"')]+)/) || [])[1];
      const rect = id && document.getElementById(id) &&
        document.getElementById(id).querySelector('rect');
      if (rect) { const q = corners(rect.getBBox(), a.getScreenCTM());
        const xs = q.map(p => p[0]), ys = q.map(p => p[1]);
        return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]; }
    }
    return null;
  };
  const abbreviator = (el, card) => { for (let a = el; a && a !== card; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.webkitLineClamp !== 'none' && s.webkitLineClamp !== '' ||
        s.textOverflow === 'ellipsis' && s.overflowX === 'hidden') return a; }
    return null; };
  const scroller = el => { for (let a = el.parentElement; a; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (['auto', 'scroll'].includes(s.overflowX)) return a; } return null; };
  const cards = [...document.querySelectorAll(selector)].filter(shown);
  return {
    viewport: window.innerWidth, pageWidth: document.documentElement.scrollWidth,
    cards: cards.map((card, i) => {
      const texts = [];
      for (const el of card.querySelectorAll('svg text')) {
        if (!el.textContent.trim() || !visibleChain(el)) continue;
        const b = el.getBBox();
        if (!b.width || !b.height) continue;
        texts.push({text: el.textContent, quad: corners(b, el.getScreenCTM()),
                    svg: box(el.ownerSVGElement.getBoundingClientRect()), clip: clipOf(el)});
      }
      const walk = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
      const cut = new Set();
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const p = n.parentElement;
        if (!n.textContent.trim() || p.closest('svg, script, style') || !visibleChain(p))
          continue;
        const a = abbreviator(p, card);
        if (a) {  // the browser cuts it with an ellipsis: what shows is the element's box
          if (!cut.has(a)) { cut.add(a); const r = a.getBoundingClientRect();
            texts.push({text: a.textContent.trim().slice(0, 60), quad: [[r.left, r.top],
              [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]], abbreviated: true,
              hover: !!a.closest('[title]')}); }
          continue;
        }
        const range = document.createRange(); range.selectNodeContents(n);
        for (const r of range.getClientRects()) {
          if (r.width < 1 || r.height < 1) continue;
          texts.push({text: n.textContent.trim().slice(0, 60), quad: [[r.left, r.top],
            [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]],
            scrolls: !!scroller(n.parentElement)});
        }
      }
      return {
        name: (card.querySelector('h2, .title') || card).textContent.trim().slice(0, 60) ||
              `card ${i}`,
        box: box(card.getBoundingClientRect()), texts,
        svgs: [...card.querySelectorAll('svg.main-svg')].map(s => box(s.getBoundingClientRect())),
        plots: [...card.querySelectorAll('.draglayer .nsewdrag')]
          .map(d => box(d.getBoundingClientRect())),
        scrollers: [...card.querySelectorAll('*')].filter(e =>
          ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
          .map(e => box(e.getBoundingClientRect())),
      };
    }),
  };
})
"""


def measure(browser: Chromium, selector: str) -> dict[str, Any]:
    return browser.evaluate(f"{MEASURE}({selector!r})")  # type: ignore[no-any-return]


def _inside(quad: Sequence[Point], box: Sequence[float]) -> bool:
    left, top, right, bottom = box
    return all(left - SLACK <= x <= right + SLACK and top - SLACK <= y <= bottom + SLACK
               for x, y in quad)


def _inset(quad: Sequence[Point], by: float = SLACK) -> list[Point]:
    cx = sum(x for x, _ in quad) / 4
    cy = sum(y for _, y in quad) / 4
    out = []
    for x, y in quad:
        dx, dy = cx - x, cy - y
        norm = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        step = min(by * 1.42, norm)  # along the diagonal: ~`by` on each side
        out.append((x + dx / norm * step, y + dy / norm * step))
    return out


def overlap(a: Sequence[Point], b: Sequence[Point]) -> bool:
    """Whether two convex quads intersect (separating axis theorem), after taking SLACK off
    every side, so that texts that merely touch do not count."""
    a, b = _inset(a), _inset(b)
    for quad in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = quad[i], quad[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            pa = [nx * x + ny * y for x, y in a]
            pb = [nx * x + ny * y for x, y in b]
            if max(pa) <= min(pb) or max(pb) <= min(pa):
                return False
    return True


def _boxes_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    return (min(a[2], b[2]) - max(a[0], b[0]) > SLACK and
            min(a[3], b[3]) - max(a[1], b[1]) > SLACK)


def _card_problems(card: dict[str, Any], viewport: float) -> list[str]:
    name, box = card["name"], card["box"]
    out = []
    if box[0] < -SLACK or box[2] > viewport + SLACK:
        out.append(f"{name!r}: card {box} leaves the {viewport} px viewport")
    for svg in card["svgs"]:
        if not _inside([(svg[0], svg[1]), (svg[2], svg[3])], box):
            out.append(f"{name!r}: figure {svg} spills out of its card {box}")
    for plot in card["plots"]:
        if plot[2] - plot[0] < MIN_PLOT_PX or plot[3] - plot[1] < MIN_PLOT_PX:
            out.append(f"{name!r}: plot area {plot} squeezed under {MIN_PLOT_PX} px")
    for scroller in card["scrollers"]:
        if not _inside([(scroller[0], scroller[1]), (scroller[2], scroller[3])], box):
            out.append(f"{name!r}: scrolling box {scroller} spills out of its card")
    texts = card["texts"]
    out += [f"{name!r}: {t['text']!r} is cut without its whole text on hover" for t in texts
            if t.get("abbreviated") and not t["hover"]]
    for t in texts:
        where = [("card", box)] if not t.get("scrolls") else []
        where += [("figure", t["svg"])] if "svg" in t else []
        where += [("clip path", t["clip"])] if t.get("clip") else []
        out += [f"{name!r}: {t['text']!r} is clipped by its {what}" for what, limit in where
                if not _inside(t["quad"], limit)]
    for i, a in enumerate(texts):
        out += [f"{name!r}: {a['text']!r} overlaps {b['text']!r}" for b in texts[i + 1:]
                if overlap(a["quad"], b["quad"])]
    return out


def problems(page: dict[str, Any]) -> list[str]:
    """Everything a reader would see as broken, as sentences (empty: nothing)."""
    out = []
    if page["pageWidth"] > page["viewport"]:
        out.append(f"the page is {page['pageWidth']} px wide in a {page['viewport']} px "
                   "viewport: it scrolls sideways")
    cards = page["cards"]
    for i, card in enumerate(cards):
        out += _card_problems(card, page["viewport"])
        out += [f"cards {card['name']!r} and {other['name']!r} overlap"
                for other in cards[i + 1:] if _boxes_overlap(card["box"], other["box"])]
    return out
