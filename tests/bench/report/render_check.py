"""Renders the report page in headless Chromium and checks the screenshot is a real page, not blank.

usage: render_check.py LAYERBENCH_REPORT DATA_DIR WORK_DIR
Exit 0 pass, 1 fail, 77 skip (no Chromium installed: CTest SKIP_RETURN_CODE).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_check import colour_stats  # noqa: E402

SKIP = 77


def main():
    report_bin, data_dir, work = sys.argv[1:4]
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "headless_shell")
                    if shutil.which(b)), None)
    if browser is None:
        print("SKIP: no chromium on PATH (apt-get install -y chromium)")
        return SKIP
    out = os.path.join(work, "render_check")
    shutil.rmtree(out, ignore_errors=True)
    inputs = [os.path.join(data_dir, f) for f in
              ("moe.json", "coll.json", "attn.json", "study.jsonl")]
    subprocess.run([report_bin, *inputs, "-o", out, "--resamples", "5000"], check=True)
    page = os.path.join(out, "report.html")
    png = os.path.join(out, "report.png")
    profile = tempfile.mkdtemp(prefix="lb-chromium-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
               "--window-size=1200,2000", "file://" + os.path.abspath(page)]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if not os.path.exists(png):
        print(run.stdout.decode(errors="replace")[-3000:])
        print("FAIL: chromium wrote no screenshot")
        return 1
    # The first figure (component share bars, Okabe-Ito blue #0072B2) lies within the first 2000 px.
    blue = (0x00, 0x72, 0xB2)
    distinct, non_white, found = colour_stats(png, [blue])
    print(f"screenshot {png}: {distinct} distinct colours, {100 * non_white:.1f}% non-white, plot blue found: {found[blue]}")
    ok = distinct >= 16 and non_white >= 0.02 and found[blue]
    print("PASS" if ok else "FAIL: the page looks blank or the SVG did not render")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
