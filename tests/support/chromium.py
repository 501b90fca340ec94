"""A page opened in headless Chromium (Debian's ``chromium``; no driver): a probe script added at the
end of its body opens every folded section, reads each plot's text boxes (getBoundingClientRect) and
writes what it found into the DOM, which ``--dump-dom`` prints; ``screenshot`` takes its picture."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html import unescape
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]

# Runs once the page is parsed: the time until then (layout forced) is the page's render time; then each
# SVG's <text> boxes: a pair that overlaps (by more than half a pixel each way) or a box past its SVG's edge.
PROBE = """<script>
(function(){
 document.body.offsetHeight;
 const rendered=performance.now();
 document.querySelectorAll('details').forEach(function(d){d.open=true});
 window.addEventListener('load',function(){
 // the sections' toggle events build their tables, but a busy machine may fire load before them: the page's
 // own builder is called here as the toggle would (it builds a table once)
 if(typeof fill==='function')document.querySelectorAll('details.lazy').forEach(function(d){if(d.open)fill(d)});
 const out={rendered_ms:rendered,plots:0,texts:0,overlaps:[],clipped:[]};
 document.querySelectorAll('svg').forEach(function(svg,n){
  out.plots++;
  const edge=svg.getBoundingClientRect();
  const boxes=Array.from(svg.querySelectorAll('text')).map(function(t){return [t.textContent,t.getBoundingClientRect()]})
   .filter(function(b){return b[1].width>0});
  out.texts+=boxes.length;
  boxes.forEach(function(b){const r=b[1];
   if(r.left<edge.left-0.5||r.right>edge.right+0.5||r.top<edge.top-0.5||r.bottom>edge.bottom+0.5)
    out.clipped.push([n,b[0]])});
  for(let i=0;i<boxes.length;i++)for(let j=i+1;j<boxes.length;j++){const a=boxes[i][1],c=boxes[j][1];
   const w=Math.min(a.right,c.right)-Math.max(a.left,c.left),h=Math.min(a.bottom,c.bottom)-Math.max(a.top,c.top);
   if(w>0.5&&h>0.5)out.overlaps.push([n,boxes[i][0],boxes[j][0]])}
 });
 out.extra=(function(){%s})();
 const pre=document.createElement('pre');pre.id='gv-probe';pre.textContent=JSON.stringify(out);
 document.body.appendChild(pre);
 });
})();
</script>"""


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "headless Chromium is needed (apt-get install -y chromium)"
    return found


def probe(page: Path, width: int = 1100, then: str = "return null") -> dict:
    """What the probe found in ``page`` (a copy with the probe added is opened from a temporary folder;
    the page is left as is); ``then``: a function body run after the measures, its JSON result the
    answer's ``extra``."""
    html = page.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        probed = Path(tmp) / page.name
        probed.write_text(html.replace("</body>", PROBE.replace("%s", then) + "</body>"), encoding="utf-8")
        done = subprocess.run(
            [chromium(), *FLAGS, f"--window-size={width},900", "--dump-dom", probed.as_uri()],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    found = re.search(r'<pre id="gv-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe wrote nothing: {done.stderr[-500:]}"
    return json.loads(unescape(found.group(1)))


def screenshot(page: Path, png: Path, width: int = 1100, height: int = 1400) -> Path:
    subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--window-size={width},{height}",
            f"--screenshot={png.resolve()}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert png.stat().st_size > 0
    return png
