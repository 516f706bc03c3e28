#!/usr/bin/env python3
"""Generate a tiny, randomly initialised Llama-style causal LM plus tokenizer for tests.

Usage::

    python scripts/make_tiny_model.py OUT_DIR

The result is a regular Hugging Face model directory (``config.json``,
``generation_config.json``, ``model.safetensors``, ``tokenizer.json``,
``tokenizer_config.json``, ...) that vLLM (CPU build included) and transformers can load.
It translates nothing: the weights are random (but deterministic, seeded), so it only
exercises the plumbing: loading, chat templating, batching, scheduling, decoding.

Design notes:

* head_dim 64 (hidden 256 / 4 heads): vLLM's CPU attention backend rejects head_dim 16.
* float32 weights: greedy decoding then gives the same tokens at tensor_parallel_size 1 and 2.
* Byte-level BPE trained on the embedded English/Spanish/Chinese sentences below: every
  input string tokenizes, nothing is ever ``<unk>``.
* ChatML chat template with ``<|im_start|>`` / ``<|im_end|>`` special tokens.
* The lm_head rows of all special tokens are zero, so their logit is always 0 while the
  random logits of ordinary tokens spread around it: greedy decoding never picks a special
  token (never stops early on EOS), so outputs always run to ``max_tokens``. Sampling with
  temperature > 0 can still pick them, rarely.

Idempotent: when OUT_DIR already holds a complete model made with the same recipe (marker
file ``.mtfleet_tiny_model`` matches), it prints ``exists`` and exits 0 without importing
torch. Files are built in a temporary sibling directory and moved in, marker last, so an
interrupted run never leaves a directory that looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Bump when anything that changes the produced files changes.
RECIPE_VERSION = "1"
MARKER = ".mtfleet_tiny_model"
SEED = 0

MODEL_CONFIG = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "initializer_range": 0.02,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}
VOCAB_SIZE_TARGET = 3072
TORCH_DTYPE = "float32"

BOS, EOS, PAD, UNK = "<s>", "</s>", "<pad>", "<unk>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK, IM_START, IM_END]  # ids 0..5 in this order

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Parallel English / Spanish / Chinese sentences: the BPE training corpus.
SENTENCES: list[tuple[str, str, str]] = [
    ("Hello, how are you?", "Hola, ¿cómo estás?", "你好，你好吗？"),
    ("Good morning.", "Buenos días.", "早上好。"),
    ("Good night and sweet dreams.", "Buenas noches y dulces sueños.", "晚安，做个好梦。"),
    ("Thank you very much.", "Muchas gracias.", "非常感谢。"),
    ("You are welcome.", "De nada.", "不客气。"),
    ("Where is the train station?", "¿Dónde está la estación de tren?", "火车站在哪里？"),
    ("How much does this cost?", "¿Cuánto cuesta esto?", "这个多少钱？"),
    ("I would like a cup of coffee.", "Me gustaría una taza de café.", "我想要一杯咖啡。"),
    ("The weather is nice today.", "Hace buen tiempo hoy.", "今天天气很好。"),
    ("It is raining outside.", "Está lloviendo afuera.", "外面在下雨。"),
    ("My name is Maria.", "Me llamo María.", "我叫玛丽亚。"),
    ("What time is it?", "¿Qué hora es?", "现在几点了？"),
    ("I do not understand.", "No entiendo.", "我不明白。"),
    ("Please speak more slowly.", "Por favor, hable más despacio.", "请说慢一点。"),
    ("Can you help me?", "¿Puede ayudarme?", "你能帮我吗？"),
    ("I am learning Spanish.", "Estoy aprendiendo español.", "我在学习西班牙语。"),
    ("I am learning Chinese.", "Estoy aprendiendo chino.", "我在学习中文。"),
    ("The book is on the table.", "El libro está sobre la mesa.", "书在桌子上。"),
    ("We are going to the beach.", "Vamos a la playa.", "我们要去海滩。"),
    (
        "She reads a newspaper every morning.",
        "Ella lee un periódico cada mañana.",
        "她每天早上读报纸。",
    ),
    ("He works in a hospital.", "Él trabaja en un hospital.", "他在医院工作。"),
    (
        "The children are playing in the park.",
        "Los niños están jugando en el parque.",
        "孩子们在公园里玩。",
    ),
    (
        "I live in a small city near the sea.",
        "Vivo en una ciudad pequeña cerca del mar.",
        "我住在海边的一个小城市。",
    ),
    ("The restaurant opens at eight o'clock.", "El restaurante abre a las ocho.", "餐厅八点开门。"),
    ("Do you have a reservation?", "¿Tiene una reserva?", "您有预订吗？"),
    ("The bill, please.", "La cuenta, por favor.", "请结账。"),
    (
        "Turn left at the next corner.",
        "Gire a la izquierda en la próxima esquina.",
        "在下一个路口左转。",
    ),
    ("The museum is closed on Mondays.", "El museo está cerrado los lunes.", "博物馆周一闭馆。"),
    ("I need to buy a new phone.", "Necesito comprar un teléfono nuevo.", "我需要买一部新手机。"),
    (
        "The meeting starts in ten minutes.",
        "La reunión empieza en diez minutos.",
        "会议十分钟后开始。",
    ),
    (
        "Please send me the report by Friday.",
        "Por favor, envíame el informe antes del viernes.",
        "请在周五之前把报告发给我。",
    ),
    ("The server is down again.", "El servidor está caído otra vez.", "服务器又宕机了。"),
    ("Your order has been shipped.", "Su pedido ha sido enviado.", "您的订单已发货。"),
    ("The package will arrive tomorrow.", "El paquete llegará mañana.", "包裹明天到达。"),
    ("Click the button to continue.", "Haga clic en el botón para continuar.", "点击按钮继续。"),
    ("Enter your password.", "Introduzca su contraseña.", "请输入您的密码。"),
    ("The file could not be found.", "No se pudo encontrar el archivo.", "找不到该文件。"),
    ("An unexpected error occurred.", "Se produjo un error inesperado.", "发生了意外错误。"),
    (
        "Save your changes before closing.",
        "Guarde los cambios antes de cerrar.",
        "关闭前请保存更改。",
    ),
    ("The translation is ready.", "La traducción está lista.", "翻译已经完成。"),
    ("This document has twelve pages.", "Este documento tiene doce páginas.", "这份文件有十二页。"),
    ("Water boils at one hundred degrees.", "El agua hierve a cien grados.", "水在一百度时沸腾。"),
    ("The earth goes around the sun.", "La tierra gira alrededor del sol.", "地球绕着太阳转。"),
    ("Music makes people happy.", "La música hace feliz a la gente.", "音乐使人快乐。"),
    (
        "I like to read books in the evening.",
        "Me gusta leer libros por la tarde.",
        "我喜欢在晚上读书。",
    ),
    (
        "My brother plays football on Sundays.",
        "Mi hermano juega al fútbol los domingos.",
        "我哥哥星期天踢足球。",
    ),
    ("Our teacher is very kind.", "Nuestra profesora es muy amable.", "我们的老师很和蔼。"),
    ("The store is next to the bank.", "La tienda está al lado del banco.", "商店在银行旁边。"),
    ("I lost my keys yesterday.", "Perdí mis llaves ayer.", "我昨天丢了钥匙。"),
    (
        "We will travel to Madrid next year.",
        "Viajaremos a Madrid el año que viene.",
        "我们明年要去马德里旅行。",
    ),
    ("Beijing is the capital of China.", "Pekín es la capital de China.", "北京是中国的首都。"),
    ("Spain is a country in Europe.", "España es un país de Europa.", "西班牙是欧洲的一个国家。"),
    ("The soup is too hot.", "La sopa está demasiado caliente.", "汤太烫了。"),
    ("Open the window, please.", "Abre la ventana, por favor.", "请打开窗户。"),
    ("Close the door when you leave.", "Cierra la puerta cuando salgas.", "离开时请关门。"),
    ("The price includes breakfast.", "El precio incluye el desayuno.", "价格包括早餐。"),
    ("I have two cats and a dog.", "Tengo dos gatos y un perro.", "我有两只猫和一只狗。"),
    ("Happy birthday!", "¡Feliz cumpleaños!", "生日快乐！"),
    ("Congratulations on your new job.", "Felicidades por tu nuevo trabajo.", "恭喜你找到新工作。"),
    ("See you tomorrow.", "Hasta mañana.", "明天见。"),
    (
        "The flight has been delayed by two hours.",
        "El vuelo se ha retrasado dos horas.",
        "航班延误了两个小时。",
    ),
    ("Please fasten your seat belt.", "Por favor, abróchese el cinturón.", "请系好安全带。"),
    ("The doctor will see you now.", "El médico le atenderá ahora.", "医生现在可以见你了。"),
    ("Drink plenty of water every day.", "Bebe mucha agua todos los días.", "每天多喝水。"),
    ("The library is quiet.", "La biblioteca está tranquila.", "图书馆很安静。"),
    ("He forgot his umbrella at home.", "Se olvidó el paraguas en casa.", "他把伞忘在家里了。"),
    ("The movie was very interesting.", "La película fue muy interesante.", "这部电影很有意思。"),
    (
        "We need more time to finish the project.",
        "Necesitamos más tiempo para terminar el proyecto.",
        "我们需要更多时间来完成这个项目。",
    ),
    (
        "The company has five hundred employees.",
        "La empresa tiene quinientos empleados.",
        "公司有五百名员工。",
    ),
    ("Prices have risen this month.", "Los precios han subido este mes.", "这个月物价上涨了。"),
    ("The river flows into the sea.", "El río desemboca en el mar.", "河流流入大海。"),
    (
        "Mountains are covered with snow in winter.",
        "Las montañas están cubiertas de nieve en invierno.",
        "冬天山上覆盖着雪。",
    ),
    ("Flowers bloom in spring.", "Las flores florecen en primavera.", "春天花开。"),
    (
        "Summer is my favorite season.",
        "El verano es mi estación favorita.",
        "夏天是我最喜欢的季节。",
    ),
    ("Leaves fall in autumn.", "Las hojas caen en otoño.", "秋天树叶落下。"),
    (
        "Translate the following segment into Spanish, without additional explanation.",
        "Traduce el siguiente segmento al español, sin explicaciones adicionales.",
        "把下面的文本翻译成西班牙语，不要额外解释。",
    ),
    (
        "Translate the following segment into English, without additional explanation.",
        "Traduce el siguiente segmento al inglés, sin explicaciones adicionales.",
        "把下面的文本翻译成英语，不要额外解释。",
    ),
    (
        "Translate the following English text into Chinese. Reply with the translation only.",
        "Traduce el siguiente texto en inglés al chino. Responde solo con la traducción.",
        "把下面的英文翻译成中文。只回复译文。",
    ),
    ("Reply with the translation only.", "Responde solo con la traducción.", "只回复译文。"),
    (
        "The quick brown fox jumps over the lazy dog.",
        "El veloz zorro marrón salta sobre el perro perezoso.",
        "敏捷的棕色狐狸跳过了懒狗。",
    ),
    (
        "Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2024.",
        "Números: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2024.",
        "数字：0 1 2 3 4 5 6 7 8 9 10 100 1000 2024。",
    ),
    (
        "Visit https://example.com/docs?page=2 for details.",
        "Visite https://example.com/docs?page=2 para más detalles.",
        "详情请访问 https://example.com/docs?page=2。",
    ),
    (
        "Send an email to support@example.com.",
        "Envíe un correo a support@example.com.",
        "请发送电子邮件至 support@example.com。",
    ),
    (
        "The total is $42.50 (tax included).",
        "El total es 42,50 € (impuestos incluidos).",
        "总计 42.50 元（含税）。",
    ),
]

EXTRA_TEXT = [
    # Every printable ASCII character, so common symbols get merges too.
    "".join(chr(c) for c in range(32, 127)),
    "a = [1, 2, 3]; b = {'key': \"value\"}; if (x < y && y > z) { return x | y ^ z; }",
    "C:\\Users\\test\\file.txt ~/home/user/.config #hash @at 50% *star* _under_ `code` +plus-",
    "¿¡ ñ Ñ á é í ó ú ü Á É Í Ó Ú Ü « » — … € £ ¥ © ® ™ ° ± × ÷",
    "，。！？；：“”‘’（）《》【】、…—·",
]


def _corpus() -> list[str]:
    lines: list[str] = []
    for en, es, zh in SENTENCES:
        lines += [en, es, zh, f"{en}\n{es}\n{zh}"]
    lines += EXTRA_TEXT
    return lines


def _recipe_fingerprint() -> str:
    blob = json.dumps(
        {
            "recipe": RECIPE_VERSION,
            "seed": SEED,
            "config": MODEL_CONFIG,
            "vocab": VOCAB_SIZE_TARGET,
            "dtype": TORCH_DTYPE,
            "special": SPECIAL_TOKENS,
            "template": CHAT_TEMPLATE,
            "corpus": _corpus(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


REQUIRED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",  # transformers 5 saves the chat template here
)


def already_built(out_dir: Path, fingerprint: str) -> bool:
    marker = out_dir / MARKER
    try:
        if marker.read_text().strip() != fingerprint:
            return False
    except OSError:
        return False
    return all((out_dir / name).is_file() for name in REQUIRED_FILES)


def build_tokenizer(work: Path):  # -> PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE_TARGET,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes: no <unk>, ever
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    # Llama-style: prepend BOS to plain encodes (vLLM encodes chat prompts without it).
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=MODEL_CONFIG["max_position_embeddings"],
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(work))
    return fast


def build_model(work: Path, tokenizer) -> None:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        **MODEL_CONFIG,
    )
    config.architectures = ["LlamaForCausalLM"]
    model = LlamaForCausalLM(config).to(getattr(torch, TORCH_DTYPE))
    with torch.no_grad():
        # Random init is N(0, initializer_range); make it explicit (and seeded) for every
        # matrix, independent of whatever init transformers applies.
        gen = torch.Generator().manual_seed(SEED)
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.copy_(
                    torch.randn(param.shape, generator=gen) * MODEL_CONFIG["initializer_range"]
                )
        # Scale lm_head so logits are peaked enough for stable greedy argmax across TP sizes.
        model.lm_head.weight.mul_(8.0)
        # Special tokens get a constant 0 logit: greedy decoding never emits them.
        for tid in ids.values():
            model.lm_head.weight[tid].zero_()
    model.save_pretrained(str(work), safe_serialization=True)
    GenerationConfig(
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        do_sample=False,
    ).save_pretrained(str(work))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(argv[1]).resolve()
    fingerprint = _recipe_fingerprint()
    if already_built(out_dir, fingerprint):
        print("exists")
        return 0

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        tokenizer = build_tokenizer(work)
        build_model(work, tokenizer)
        out_dir.mkdir(exist_ok=True)
        (out_dir / MARKER).unlink(missing_ok=True)
        for item in sorted(work.iterdir()):
            target = out_dir / item.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(item, target)
        for item in out_dir.iterdir():
            if item.is_file():
                item.chmod(0o644)  # safetensors is written 0600 via a temp file
        (out_dir / MARKER).write_text(fingerprint + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out_dir} (vocab {len(tokenizer)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
