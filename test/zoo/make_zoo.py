#!/usr/bin/env python3
"""Builds the zoo: real architectures from torchvision and Hugging Face
transformers, with random weights and no downloads, exported by torch.onnx.

Each architecture is made from its constructor (torchvision, weights=None) or
from a tiny config (transformers, `XxxConfig(...)` then the model class), put
in eval mode, exported at static shapes (images 1x3x64x64, sequences of 16
tokens) and run by ONNX Runtime on seeded random inputs. Its folder
OUT_DIR/NAME/ holds, like test/models: model.onnx, inputs/*.npy, expected/*.npy
(ONNX Runtime's outputs) and manifest.json (inputs, outputs, --shape bindings,
opset, where the architecture comes from, what it covers, the export time).
torch's own outputs are checked against ONNX Runtime's at rtol 1e-3 / atol
1e-4, so the expected outputs come from two implementations that agree.

Nothing is skipped silently: an architecture that cannot be built or exported
is an error that names it and the reason (exit status 1 after trying all).

Usage: make_zoo.py OUT_DIR [--only NAME,...] [--reuse] | --list
"""
import argparse
import json
import os
import sys
import time
import traceback

IMAGE = (1, 3, 64, 64)
SEQUENCE = (1, 16)
VOCAB = 128
OPSET = 17


# ---------------------------------------------------------------------------
# torchvision
# ---------------------------------------------------------------------------

def _randomize_vision(model):
    """Gives a torchvision model's weights the scales of a trained one.
    BatchNorm with running statistics 0/1 and affine 1/0 is nearly the
    identity; random statistics make the folded convolutions differ from their
    raw weights, as trained ones do."""
    import torch  # noqa: PLC0415
    for m in model.modules():
        # torchvision starts some classifiers at zero (ViT's head) or at a
        # std of 0.01 (MobileNet-V3): logits that small would pass any atol.
        # torch's default init gives them a scale an error shows against.
        if isinstance(m, torch.nn.Linear):
            m.reset_parameters()
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model


def _vision(make):
    def build():
        import torch  # noqa: PLC0415
        model = _randomize_vision(make())
        return model, {"image": torch.randn(*IMAGE)}, ["logits"]
    return build


def _tv(name, **kwargs):
    def make():
        import torchvision  # noqa: PLC0415
        return getattr(torchvision.models, name)(weights=None, **kwargs)
    return make


def _small_vit():
    # vit_b_16 fixes image_size=224 and 86M parameters; the same class with a
    # 64x64 image, 16x16 patches, 2 layers of width 64 is the same graph
    # shape per layer.
    from torchvision.models.vision_transformer import VisionTransformer  # noqa: PLC0415
    return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4,
                             hidden_dim=64, mlp_dim=128, num_classes=10)


def _small_swin():
    # swin_t's class (shifted windows 7x7, patch merging, relative position
    # bias) at a reduced width: embed_dim 32 instead of 96.
    from torchvision.models.swin_transformer import SwinTransformer  # noqa: PLC0415
    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2],
                           num_heads=[1, 2, 4, 8], window_size=[7, 7],
                           stochastic_depth_prob=0.2, num_classes=10)


def _small_convnext():
    # convnext_tiny's blocks (7x7 depthwise, LayerNorm2d, layer scale) at a
    # quarter of its width, depths (3, 3, 9, 3) kept.
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt  # noqa: PLC0415
    settings = [CNBlockConfig(24, 48, 3), CNBlockConfig(48, 96, 3),
                CNBlockConfig(96, 192, 9), CNBlockConfig(192, None, 3)]
    return ConvNeXt(settings, stochastic_depth_prob=0.1, num_classes=10)


# ---------------------------------------------------------------------------
# transformers (tiny configs)
# ---------------------------------------------------------------------------

class _Outputs0:
    """Wraps a transformers model so that it returns its first output (hidden
    states or logits) as one tensor, without a key-value cache."""

    def __new__(cls, model, causal):
        import torch  # noqa: PLC0415

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, input_ids):
                kwargs = {"use_cache": False} if causal else {}
                return self.model(input_ids=input_ids, return_dict=False, **kwargs)[0]

        return Wrapper()


def _hf(config_name, model_name, causal, **config):
    def build():
        import torch  # noqa: PLC0415
        import transformers  # noqa: PLC0415
        cfg = getattr(transformers, config_name)(**config)
        model = getattr(transformers, model_name)(cfg)
        ids = torch.randint(1, VOCAB, SEQUENCE)
        output = "logits" if causal else "last_hidden_state"
        return _Outputs0(model, causal), {"input_ids": ids}, [output]
    return build


TINY = {"vocab_size": VOCAB, "max_position_embeddings": 64}
LLAMA = dict(TINY, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4)

# name: (source, what it covers, builder)
ZOO = {
    "resnet18": ("torchvision resnet18", "residual CNN, strided convs, max/avg pooling",
                 _vision(_tv("resnet18"))),
    "mobilenet_v2": ("torchvision mobilenet_v2", "depthwise convs, inverted residuals, ReLU6",
                     _vision(_tv("mobilenet_v2"))),
    "mobilenet_v3_small": ("torchvision mobilenet_v3_small",
                           "depthwise convs, squeeze-excitation, hardswish/hardsigmoid",
                           _vision(_tv("mobilenet_v3_small"))),
    "shufflenet_v2_x0_5": ("torchvision shufflenet_v2_x0_5",
                           "channel shuffle (reshape/transpose), split, concat",
                           _vision(_tv("shufflenet_v2_x0_5"))),
    "densenet121": ("torchvision densenet121", "dense concatenation, BN-ReLU-conv, avg pooling",
                    _vision(_tv("densenet121"))),
    "efficientnet_b0": ("torchvision efficientnet_b0",
                        "MBConv, squeeze-excitation, SiLU, depthwise 5x5",
                        _vision(_tv("efficientnet_b0"))),
    "squeezenet1_1": ("torchvision squeezenet1_1", "fire modules, ceil-mode max pooling",
                      _vision(_tv("squeezenet1_1"))),
    "regnet_y_400mf": ("torchvision regnet_y_400mf", "group convs, squeeze-excitation",
                       _vision(_tv("regnet_y_400mf"))),
    "vit": ("torchvision VisionTransformer (vit_b_16's class, 64x64 image, 2 layers, width 64)",
            "patch embedding conv, class token, pre-LN encoder, GELU",
            _vision(_small_vit)),
    "swin_t": ("torchvision SwinTransformer (swin_t's class, embed_dim 32)",
               "shifted-window attention, relative position bias, roll, patch merging, "
               "Dropout(0, training_mode)",
               _vision(_small_swin)),
    "convnext_tiny": ("torchvision ConvNeXt (convnext_tiny's blocks, 1/4 width)",
                      "7x7 depthwise convs, LayerNorm over channels, layer scale",
                      _vision(_small_convnext)),
    "bert": ("transformers BertModel", "post-LN encoder, erf GELU, token types",
             _hf("BertConfig", "BertModel", False, hidden_size=64, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=128, **TINY)),
    "roberta": ("transformers RobertaModel", "post-LN encoder, positions from padding cumsum",
                _hf("RobertaConfig", "RobertaModel", False, hidden_size=64,
                    num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    **TINY)),
    "distilbert": ("transformers DistilBertModel", "encoder without token types",
                   _hf("DistilBertConfig", "DistilBertModel", False, dim=64, n_layers=2,
                       n_heads=4, hidden_dim=128, **TINY)),
    "gpt2": ("transformers GPT2LMHeadModel", "pre-LN decoder, Conv1D projections, tanh GELU",
             _hf("GPT2Config", "GPT2LMHeadModel", True, vocab_size=VOCAB, n_positions=64,
                 n_embd=64, n_layer=2, n_head=4)),
    "opt": ("transformers OPTForCausalLM", "decoder, learned offset positions, ReLU",
            _hf("OPTConfig", "OPTForCausalLM", True, hidden_size=64, num_hidden_layers=2,
                ffn_dim=128, num_attention_heads=4, word_embed_proj_dim=64, **TINY)),
    "gpt_neox": ("transformers GPTNeoXForCausalLM", "parallel residual, partial rotary",
                 _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", True, hidden_size=64,
                     num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     **TINY)),
    "llama": ("transformers LlamaForCausalLM", "RMSNorm, rotary, SwiGLU, multi-head",
              _hf("LlamaConfig", "LlamaForCausalLM", True, num_key_value_heads=4, **LLAMA)),
    "llama_gqa": ("transformers LlamaForCausalLM (num_key_value_heads 2 of 4)",
                  "grouped-query attention (repeat_kv)",
                  _hf("LlamaConfig", "LlamaForCausalLM", True, num_key_value_heads=2, **LLAMA)),
    "mistral": ("transformers MistralForCausalLM (sliding_window 8 < 16 tokens)",
                "sliding-window causal mask, grouped-query attention",
                _hf("MistralConfig", "MistralForCausalLM", True, num_key_value_heads=2,
                    sliding_window=8, **LLAMA)),
    "t5_encoder": ("transformers T5EncoderModel", "RMS-style LayerNorm, relative position buckets",
                   _hf("T5Config", "T5EncoderModel", False, vocab_size=VOCAB, d_model=64,
                       d_kv=16, d_ff=128, num_layers=2, num_heads=4)),
}


def up_to_date(out_dir, name):
    """Whether OUT_DIR/NAME was written (completely: the manifest comes
    last) after this script last changed."""
    manifest = os.path.join(out_dir, name, "manifest.json")
    return (os.path.exists(manifest)
            and os.path.getmtime(manifest) > os.path.getmtime(os.path.abspath(__file__)))


def export_one(out_dir, name):
    """Builds, exports and records one architecture; raises with the reason
    when it cannot."""
    import numpy as np  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415
    import torch  # noqa: PLC0415
    source, covers, build = ZOO[name]
    # Each architecture seeds itself, so --only gives the same files.
    torch.manual_seed(0)
    np.random.seed(0)
    start = time.time()
    model, inputs, output_names = build()
    model.eval()
    folder = os.path.join(out_dir, name)
    for sub in ("inputs", "expected"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    input_names = list(inputs)
    args = tuple(inputs.values())
    # Exported with gradients enabled: under no_grad, nn.MultiheadAttention
    # (ViT) takes its fused fast path, which torch 1.13 cannot export.
    torch.onnx.export(model, args, path, input_names=input_names,
                      output_names=output_names, opset_version=OPSET,
                      do_constant_folding=True)
    with torch.no_grad():
        torch_outputs = model(*args)
    if not isinstance(torch_outputs, (tuple, list)):
        torch_outputs = (torch_outputs,)
    feeds = {n: t.numpy() for n, t in inputs.items()}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_outputs = session.run(output_names, feeds)
    for n, value in feeds.items():
        np.save(os.path.join(folder, "inputs", n + ".npy"), value)
    for n, t, o in zip(output_names, torch_outputs, ort_outputs):
        np.save(os.path.join(folder, "expected", n + ".npy"), o)
        want = t.numpy()
        if float(np.std(o)) < 1e-2:
            raise RuntimeError(f"output {n} is nearly constant (std {float(np.std(o)):.1e}): "
                               "a check at atol 1e-4 could not fail on it")
        if want.shape != o.shape or not np.allclose(o, want, rtol=1e-3, atol=1e-4):
            raise RuntimeError(f"ONNX Runtime disagrees with torch on {n}: max abs diff "
                               f"{float(np.max(np.abs(want - o))):.2e}")
    seconds = time.time() - start
    manifest = {"source": source, "covers": covers, "opset": OPSET,
                "inputs": input_names, "outputs": output_names,
                "shapes": [f"{n}={'x'.join(map(str, v.shape))}" for n, v in feeds.items()],
                "export_seconds": round(seconds, 1),
                "model_bytes": os.path.getsize(path)}
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{name}: {manifest['model_bytes']} bytes, {seconds:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--only", help="comma-separated architecture names")
    ap.add_argument("--list", action="store_true", help="print the names and exit")
    ap.add_argument("--reuse", action="store_true",
                    help="keep architectures already written since this script changed")
    args = ap.parse_args()
    if args.list:
        print("\n".join(ZOO))
        return 0
    if not args.out_dir:
        ap.error("OUT_DIR is required")
    names = args.only.split(",") if args.only else list(ZOO)
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        sys.exit(f"unknown architecture(s): {', '.join(unknown)} (known: {', '.join(ZOO)})")
    os.makedirs(args.out_dir, exist_ok=True)
    import torch  # noqa: PLC0415
    torch.set_num_threads(1)
    failed = []
    start = time.time()
    for name in names:
        if args.reuse and up_to_date(args.out_dir, name):
            print(f"{name}: up to date")
            continue
        try:
            export_one(args.out_dir, name)
        except Exception as e:  # noqa: BLE001 -- reported by name below
            traceback.print_exc()
            failed.append(f"{name}: {type(e).__name__}: {e}")
    print(f"zoo: {len(names) - len(failed)} of {len(names)} built in "
          f"{time.time() - start:.0f} s")
    for line in failed:
        print("FAILED " + line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
