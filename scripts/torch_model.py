#!/usr/bin/python3
"""Writes tests/models/torch_mlp_layernorm/: a real PyTorch export (Debian's
python3-torch and python3-onnx; run with /usr/bin/python3) of a small
transformer feed-forward block, with the outputs PyTorch computed.

    x [batch, 32] -> Linear(32, 64) -> GELU -> Linear(64, 32) -> + x
      -> LayerNorm(32) -> Softmax

At opset 13 torch.onnx.export writes the 2-D Linear layers as Gemm and the
LayerNorm decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
Add), as exports from PyTorch before opset 17 do; the batch dimension is
dynamic (so fuselab needs --input-shape x=4,32).  test_data_set_0 holds a
batch of 4 as ONNX TensorProto files (input_0.pb, output_0.pb).

usage: /usr/bin/python3 scripts/torch_model.py [OUTDIR]
"""
import os
import sys

import onnx
import onnx.numpy_helper
import torch


class FeedForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.act = torch.nn.GELU()
        self.down = torch.nn.Linear(64, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        h = self.down(self.act(self.up(x)))
        return torch.softmax(self.norm(h + x), dim=-1)


def save_tensor(array, name, path):
    t = onnx.numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else \
        "tests/models/torch_mlp_layernorm"
    torch.manual_seed(7)
    model = FeedForward().eval()
    x = torch.randn(4, 32)
    with torch.no_grad():
        y = model(x)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"),
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(os.path.join(out, "model.onnx")))
    data = os.path.join(out, "test_data_set_0")
    save_tensor(x.numpy(), "x", os.path.join(data, "input_0.pb"))
    save_tensor(y.numpy(), "y", os.path.join(data, "output_0.pb"))


if __name__ == "__main__":
    main()
