"""shoot.py URL OUT.png WIDTH [--mobile] [--top Y | --from HEADING] [--height H | --until HEADING] [--open CSS]...:
a screenshot of the whole page (or a band of it) at a CSS width in headless Chromium through the
DevTools protocol (Emulation.setDeviceMetricsOverride: a real 390 px layout viewport; Chromium's
--window-size stops at 500 px), and prints the page's measurements: its scrollWidth against the
viewport (horizontal overflow), elements past the right edge outside a horizontally scrolling box,
and the scrolling boxes (.scroll) whose content is wider than the box.

--open CSS opens the <details> it selects before the shot (repeatable); --until HEADING ends the
band at the <h2> with that text, --from starts it there. Needs the chromium package and websocket-client (pip)."""
import argparse, base64, json, os, subprocess, tempfile, time, urllib.request
import websocket

ap = argparse.ArgumentParser()
ap.add_argument("url"); ap.add_argument("out"); ap.add_argument("width", type=int)
ap.add_argument("--mobile", action="store_true"); ap.add_argument("--height", type=int, default=0)
ap.add_argument("--top", type=int, default=0); ap.add_argument("--until", default=""); ap.add_argument("--from", dest="start", default="")
ap.add_argument("--open", action="append", default=[]); ap.add_argument("--scale", type=float, default=1)
a = ap.parse_args()
prof = tempfile.mkdtemp()
port = 9333
p = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                      f"--remote-debugging-port={port}", f"--user-data-dir={prof}", "about:blank"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
            break
        except OSError:
            time.sleep(0.1)
    ws = websocket.create_connection(next(t for t in tabs if t["type"] == "page")["webSocketDebuggerUrl"],
                                     suppress_origin=True)
    n = [0]
    def cdp(method, **params):
        n[0] += 1
        ws.send(json.dumps({"id": n[0], "method": method, "params": params}))
        while True:
            m = json.loads(ws.recv())
            if m.get("id") == n[0]:
                if "error" in m:
                    raise RuntimeError(m["error"])
                return m.get("result", {})
    cdp("Page.enable")
    cdp("Emulation.setDeviceMetricsOverride", width=a.width, height=900, deviceScaleFactor=a.scale, mobile=a.mobile)
    cdp("Page.navigate", url=a.url)
    time.sleep(1.5)
    for css in a.open:
        cdp("Runtime.evaluate", expression=f"document.querySelectorAll({json.dumps(css)}).forEach(d => d.open = true)")
    js = """(() => {const d = document.documentElement; const o = [];
      for (const e of document.querySelectorAll('body *')) { const r = e.getBoundingClientRect();
        if (r.right > innerWidth + 0.5 && !e.closest('.scroll')) o.push(e.tagName + '.' + e.className + '=' + Math.round(r.right)); }
      const sc = [...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth + 0.5).map(e => (e.querySelector('th') || e).textContent.slice(0, 20) + ':' + e.scrollWidth + '>' + e.clientWidth);
      return JSON.stringify({innerWidth, scrolling_boxes: sc, scrollWidth: d.scrollWidth, height: d.scrollHeight, overflowing: o.slice(0, 10), n_overflowing: o.length}); })()"""
    info = json.loads(cdp("Runtime.evaluate", expression=js, returnByValue=True)["result"]["value"])
    def heading_y(text):
        y = cdp("Runtime.evaluate", returnByValue=True, expression=f"[...document.querySelectorAll('h2')].find("
                f"e => e.textContent.trim() == {json.dumps(text)}).getBoundingClientRect().top + scrollY - 8")
        return int(y["result"]["value"])
    if a.start:
        a.top = heading_y(a.start)
    h = a.height or info["height"] - a.top
    if a.until:
        h = heading_y(a.until) - a.top
    shot = cdp("Page.captureScreenshot", format="png", captureBeyondViewport=True,
               clip={"x": 0, "y": a.top, "width": a.width, "height": h, "scale": 1})
    with open(a.out, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    info["png"] = a.out; info["png_height"] = h
    print(json.dumps(info))
finally:
    p.terminate(); p.wait()
