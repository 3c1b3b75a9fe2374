# SPDX-License-Identifier: BSD-3-Clause
# notebook_tour_test: runs notebooks/sandbox-tour.ipynb cell by cell with jupyter_client against a
# jailed kernel (kernelspec through cellgate-jail); the bash cell must report the sandbox identity
# and no cell may error. Usage: notebook_tour_test.py NOTEBOOK
import sys

import nbformat

from jailed_kernel import JailedKernel, require_or_skip


def run_cell(kc, source, timeout=180):
    texts, errors = [], []

    def hook(msg):
        kind = msg["msg_type"]
        if kind == "stream":
            texts.append(msg["content"]["text"])
        elif kind == "error":
            errors.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif kind in ("execute_result", "display_data"):
            texts.append(msg["content"]["data"].get("text/plain", ""))
    reply = kc.execute_interactive(source, output_hook=hook, timeout=timeout)
    if reply["content"]["status"] != "ok":
        errors.append(f"reply status {reply['content']['status']}: {reply['content'].get('ename', '')}")
    return "".join(texts), errors


def main():
    jail = require_or_skip()
    nb = nbformat.read(sys.argv[1], 4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    failures = []
    kernel = JailedKernel(jail)
    helper = None
    try:
        _, kc = kernel.start()
        helper = kernel.helper_pid()
        for i, cell in enumerate(code):
            text, errors = run_cell(kc, cell.source)
            print(f"--- cell {i}:\n{text.rstrip()}", flush=True)
            if errors:
                failures.append(f"cell {i} errored: {errors}")
            if i == 0:
                for want in ("User:     sandbox", "Host:     sandbox", "Linux", "/workspace"):
                    if want not in text:
                        failures.append(f"bash cell output lacks {want!r}")
            elif "this should not happen" in text or len(text.strip().splitlines()) != 1:
                failures.append(f"cell {i} did not print one friendly 'held' line: {text.strip()!r}")
    except Exception as e:
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        kernel.stop()
    if helper is not None:
        failures += kernel.leftovers(helper)
    for f in failures:
        print(f"FAIL: {f}", flush=True)
    print("PASS" if not failures else "FAILED", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
