"""Seconds per GroundingDINO-tiny detection on this machine (CPU, or --device cuda).

    python benchmarks/grounding_forward.py [--size 1024] [--rounds 3] [--device cpu]

The weights of IDEA-Research/grounding-dino-tiny cannot be downloaded here, so the model is
built from its architecture (Swin-T backbone, 172 M parameters) with random weights: the
time of a forward does not depend on the weights' values. The input is resized as the
GroundingDINO processor does (shortest edge 800). Used for the arithmetic in docs/ray.md.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="square input image, pixels")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import torch
    import transformers
    from PIL import Image

    backbone = transformers.SwinConfig(
        embed_dim=96,
        depths=[2, 2, 6, 2],
        num_heads=[3, 6, 12, 24],
        window_size=7,
        out_features=["stage2", "stage3", "stage4"],
    )
    config = transformers.GroundingDinoConfig(backbone_config=backbone)
    model = transformers.GroundingDinoForObjectDetection(config).eval().to(args.device)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "red", "car"]
    processor = transformers.GroundingDinoProcessor(
        image_processor=transformers.GroundingDinoImageProcessorPil(),
        tokenizer=transformers.BertTokenizer(vocab={w: i for i, w in enumerate(words)}),
    )
    image = Image.new("RGB", (args.size, args.size), "white")
    inputs = processor(images=image, text="a red car.", return_tensors="pt").to(args.device)
    parameters = sum(p.numel() for p in model.parameters()) / 1e6
    print(
        f"GroundingDINO-tiny architecture, {parameters:.0f} M parameters, input "
        f"{tuple(inputs['pixel_values'].shape[-2:])}, device {args.device}, "
        f"{torch.get_num_threads()} threads"
    )
    times = []
    with torch.inference_mode():
        model(**inputs)  # warm-up
        for _ in range(args.rounds):
            started = time.perf_counter()
            model(**inputs)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
    print("seconds per forward: " + ", ".join(f"{t:.2f}" for t in times))


if __name__ == "__main__":
    main()
