"""make zoo's export check: fuselab's --export-onnx of a zoo model.

    python zoo_export_check.py EXPORT.onnx DATA_DIR ATOL

Passes when onnx.checker's full check accepts EXPORT.onnx and ONNX
Runtime, run on it with DATA_DIR/input_K.pb, reproduces DATA_DIR's
output_K.pb (ONNX Runtime's outputs of the original model) within rtol
1e-3 and ATOL: the exported file computes what the model does.  Prints
one line; exit status 0 when it passes, 1 when not.
"""
import glob
import os
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def tensors(folder, stem):
    """The folder's STEM_K.pb files as (name, array), in K's order."""
    files = glob.glob(os.path.join(folder, stem + "_*.pb"))
    files.sort(key=lambda f: int(re.findall(r"_(\d+)\.pb$", f)[0]))
    out = []
    for f in files:
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        out.append((t.name, numpy_helper.to_array(t)))
    return out


def main():
    if len(sys.argv) != 4:
        print("usage: zoo_export_check.py EXPORT.onnx DATA_DIR ATOL")
        return 2
    path, data, atol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:  # the checker's own message says what is wrong
        print("onnx.checker: %s" % str(e).splitlines()[0][:200])
        return 1
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    feeds = {}
    for k, (name, arr) in enumerate(tensors(data, "input")):
        feeds[name if name in names else names[k]] = arr
    got = sess.run(None, feeds)
    worst = 0.0
    for k, (_, want) in enumerate(tensors(data, "output")):
        diff = np.abs(got[k].astype(np.float64) - want.astype(np.float64))
        if not np.allclose(got[k], want, rtol=1e-3, atol=atol):
            print("ONNX Runtime on the export: output %d differs from the "
                  "model's by up to %.3g (rtol 1e-3, atol %g)"
                  % (k, float(diff.max()), atol))
            return 1
        worst = max(worst, float(diff.max()))
    print("ONNX Runtime on the export reproduces the model's outputs "
          "(max abs %.3g)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
