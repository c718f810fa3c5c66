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
from png_check import colour_stats, decode_png  # noqa: E402

SKIP = 77


def screenshot(browser, page, png, size="1200,2000"):
    profile = tempfile.mkdtemp(prefix="lb-chromium-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={size}", "file://" + os.path.abspath(page)]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if not os.path.exists(png):
        print(run.stdout.decode(errors="replace")[-3000:])
        print("FAIL: chromium wrote no screenshot")
        return False
    return True


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
    if not screenshot(browser, page, png):
        return 1
    # The first figure (component share bars, Okabe-Ito blue #0072B2) lies within the first 2000 px.
    blue = (0x00, 0x72, 0xB2)
    distinct, non_white, found = colour_stats(png, [blue])
    print(f"screenshot {png}: {distinct} distinct colours, {100 * non_white:.1f}% non-white, plot blue found: {found[blue]}")
    ok = distinct >= 16 and non_white >= 0.02 and found[blue]
    print("page 1 ok" if ok else "FAIL: the page looks blank or the SVG did not render")

    # A trace (--trace of the MoE fixture run) beside its results: the timeline SVG sits beside the
    # traced-components table, components in blue, collectives in vermillion, waits in grey.
    out2 = os.path.join(work, "render_check_trace")
    shutil.rmtree(out2, ignore_errors=True)
    subprocess.run([report_bin, os.path.join(data_dir, "moe-trace.json"), "-o", out2], check=True)
    page2 = os.path.join(out2, "report.html")
    html = open(page2, encoding="utf-8").read()
    beside = '<div class="beside">' in html and 'class="slices"' in html and "Traced components" in html
    png2 = os.path.join(out2, "report.png")
    if not screenshot(browser, page2, png2, "2000,1400"):
        return 1
    # Beside, on a wide window: collective vermillion right of the table's columns (x > 1000 px),
    # within the first 900 px (where the table stands).
    width, height, channels, rows = decode_png(png2)
    right = any(all(abs(row[x + k] - (0xD5, 0x5E, 0x00)[k]) <= 24 for k in range(3))
                for row in rows[:900] for x in range(1000 * channels, width * channels, channels))
    beside = beside and right
    vermillion, grey = (0xD5, 0x5E, 0x00), (0x9A, 0x9A, 0x9A)
    distinct2, non_white2, found2 = colour_stats(png2, [blue, vermillion, grey])
    print(f"screenshot {png2}: {distinct2} distinct colours, {100 * non_white2:.1f}% non-white, component blue "
          f"{found2[blue]}, collective vermillion {found2[vermillion]}, wait grey {found2[grey]}, "
          f"timeline beside the table (HTML and a vermillion slice right of it): {beside}")
    ok2 = beside and distinct2 >= 16 and all(found2.values())
    print("page 2 ok" if ok2 else "FAIL: the trace's timeline did not render beside its table")
    print("PASS" if ok and ok2 else "FAIL")
    return 0 if ok and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())
