"""Take a setting to a serving engine: launch commands and one request for vLLM and SGLang, the
equivalent transformers `generate` call, and plain notes on what each engine cannot express.

Pure functions of the page's settings (any object with playground.presets.Settings' attributes); no
torch, no model loading. Every flag, config key and request field emitted is listed with the file and
commit it was read from in tests/data/engine_options.json (checked by tests/test_export.py). User
text is quoted for its destination: shlex (shell), json.dumps (JSON), repr (Python)."""
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from playground import strict_json
from playground.config import NO_THINK_END, SCHEMA_HINT, THINK_END, one_constraint, thinks, tree_budget, tree_lookup, tree_nodes, tree_shape
from playground.draft_ids import LOOKUP_NGRAM, NGRAM, draft_model, is_cascade
from playground.errors import PlaygroundError
from playground.limits import MAX_GRAMMAR_CHARS, MAX_REGEX_CHARS, MAX_SCHEMA_TEXT_CHARS, at_most

# Names the playground uses that are not hub ids (hub id from playground.models.packaged.PACKAGED,
# which imports torch; the tests check the two agree). The demo pair exists only in this repository.
HUB_IDS = {"smollm2-135m-instruct": "HuggingFaceTB/SmolLM2-135M-Instruct"}
LOCAL = {"demo-target": "playground/models/demo_pair/target", "demo-draft": "playground/models/demo_pair/draft"}
FEATURE_DRAFT, REDUCED_DRAFT = "smollm2-feature-draft", "smollm2-draft"
SHIPPED_WITHOUT_THINK_END = {*LOCAL, *HUB_IDS}  # the shipped targets, whose tokenizers have no </think> (checked by
# tests/test_export.py): a thinking budget under a constraint is refused by Run, and was exported (a review)
LOOKUP_MAX, LOOKUP_MIN = LOOKUP_NGRAM, 1  # the playground's prompt lookup matches the last 3 tokens down to 1
REASONING = {"Qwen/Qwen3-": ("qwen3", "qwen3"), "deepseek-ai/DeepSeek-R1": ("deepseek_r1", "deepseek-r1")}
# Qwen3's Instruct checkpoints (Instruct-2507, Coder, Next-Instruct) never write <think>: given the qwen3
# reasoning parser, vLLM and SGLang wait for a </think> that never comes (the constraint never starts, the
# answer is read as reasoning). Its Thinking checkpoints always think: the template opens <think> whatever
# enable_thinking says, as DeepSeek-R1's does (read in vLLM 0.33's and SGLang 0.5.23's parsers, a review).
QWEN3, R1 = "Qwen/Qwen3-", "deepseek-ai/DeepSeek-R1-"
VLLM_BACKEND = {"llguidance": "guidance", "xgrammar": "xgrammar"}  # vLLM calls llguidance "guidance"
PORTS = {"vllm": 8000, "sglang": 30000}  # each server's default port
UNNAMEABLE = re.compile(r"[\x00-\x1f\x7f]")  # in a model id: a control character (a line break ended a command's
# line, and a line of ``` after it the Markdown's code block; a backtick alone never starts a line there)
# Logits widths (config vocab_size) of the preset models whose pairs differ: Qwen2.5 0.5B-3B 151936,
# 7B and up 152064 (checked on real configs), and the R1 distills built on them (vllm-project/vllm
# issue 14939). vLLM refuses such a pair unless told use_heterogeneous_vocab; transformers too.
WIDTHS = {**{f"Qwen/Qwen2.5-{size}-Instruct": 151936 for size in ("0.5B", "1.5B", "3B")},
          **{f"Qwen/Qwen2.5-{size}-Instruct": 152064 for size in ("7B", "14B", "32B", "72B")},
          **{f"Qwen/Qwen2.5-Coder-{size}-Instruct": 151936 for size in ("0.5B", "1.5B", "3B")},
          **{f"Qwen/Qwen2.5-Coder-{size}-Instruct": 152064 for size in ("7B", "14B", "32B")},
          "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": 151936,
          **{f"deepseek-ai/DeepSeek-R1-Distill-Qwen-{size}": 152064 for size in ("7B", "14B", "32B")}}


@dataclass(frozen=True)
class Export:
    vllm_command: str  # `vllm serve ...`, shell-quoted
    vllm_request: dict  # OpenAI-compatible body for POST `endpoint`
    sglang_command: str  # `python -m sglang.launch_server ...`
    sglang_request: dict  # SGLang's OpenAI-compatible body for POST `endpoint`
    transformers_code: str  # a Python snippet: one `model.generate(...)` call
    notes: dict  # engine ("vllm", "sglang", "transformers") -> sentences on what it cannot express
    endpoint: str  # "/v1/chat/completions" (chat) or "/v1/completions"
    alone: str = ""  # where a draft was named but no engine can load it: that the commands serve the target alone


def export_setting(s: Any) -> Export:
    """The setting `s` (duck-typed Settings) as engine commands, requests and a generate call."""
    (kind, draft), constraint = _draft(s.draft), _constraint(s)
    if s.think_budget > 0 and constraint and s.target in SHIPPED_WITHOUT_THINK_END:  # as Run refuses it
        raise PlaygroundError(NO_THINK_END)
    notes = {"vllm": [], "sglang": [], "transformers": []}
    _shared_notes(s, kind, draft, constraint, notes)
    return Export(_vllm_command(s, kind, draft, constraint, notes["vllm"]), _request(s, constraint, "vllm"),
                  _sglang_command(s, kind, draft, constraint, notes["sglang"]), _request(s, constraint, "sglang"),
                  _transformers(s, kind, draft, notes["transformers"]), notes,
                  "/v1/chat/completions" if _chat(s) else "/v1/completions", _alone(s, kind))


def _alone(s, kind: str) -> str:
    """One line ahead of the notes where the draft is the playground's own (a newcomer's review: the default preset's
    export served the target alone, said only in the notes below a promise of serving at scale)."""
    if kind not in ("feature", "reduced"):
        return ""
    return (f"Nothing speculative to export: the draft {draft_model(s.draft)} runs only in this playground, so each engine "
            "below runs the target alone (the notes say why). A draft that is a whole model sharing the target's "
            "vocabulary exports speculation: the preset smollm2-1.7b, say.")


TOKEN_LIKE = re.compile(r"<\|[^|\s<>]{1,40}\|>|<｜[^｜\s<>]{1,40}｜>|</?s>")  # as chat templates spell theirs


def _chat(s) -> bool:
    """Whether the run used a chat template: the demo pair has none, so the playground sends raw text."""
    return s.chat and s.target not in LOCAL


def _never_thinks(target: str) -> bool:
    return target.startswith(QWEN3) and "-Instruct" in target


def _always_thinks(target: str) -> bool:
    """Its chat template opens <think> whatever it is asked."""
    return target.startswith(R1) or (target.startswith(QWEN3) and "-Thinking" in target)


def _no_thinking(s, constraint) -> bool:
    """Hybrid Qwen3 asked to answer without thinking, as the playground asks it (config.thinks); its
    template reads enable_thinking (other templates ignore it: not emitted for them)."""
    hybrid = s.target.startswith(QWEN3) and not _never_thinks(s.target) and not _always_thinks(s.target)
    return _chat(s) and hybrid and not thinks(constraint is not None, s.think_budget)


def _widths(s, draft: str | None) -> tuple[int, int] | None:
    """(target's, draft's) logits widths where they are known to differ, else None."""
    widths = WIDTHS.get(_hub(s.target)), WIDTHS.get(draft or "")
    return widths if None not in widths and widths[0] != widths[1] else None


def _hub(model_id: str) -> str:
    if not model_id.strip() or model_id.startswith("-"):  # a command line would read "-..." as an option
        raise PlaygroundError(f"model id '{model_id[:40]}' is empty or starts with '-': no server can load it")
    if odd := UNNAMEABLE.search(model_id):  # (a newline and ``` closed the Markdown's code fence early: a review)
        raise PlaygroundError(f"model id {model_id[:40]!r} holds {odd.group()!r}: export refuses control characters in "
                              "a model id, which would break its commands' lines")
    return HUB_IDS.get(model_id) or LOCAL.get(model_id) or model_id


def _draft(draft: str) -> tuple[str, str | None]:
    """-> (kind, model id to load): model, ngram, cascade (its inner model), feature, reduced, none."""
    named = {NGRAM: "ngram", FEATURE_DRAFT: "feature", REDUCED_DRAFT: "reduced", "": "none"}
    if draft in named:
        return named[draft], None
    if is_cascade(draft) and draft_model(draft) in named:  # over a draft no engine loads: said as that draft alone
        return named[draft_model(draft)], None  # (a launch command named `smollm2-draft`, a local alias)
    return ("cascade" if is_cascade(draft) else "model"), _hub(draft_model(draft))


def _constraint(s) -> tuple[str, Any] | None:
    """("json", schema dict), ("regex", pattern), ("grammar", text) or None; one at most, as the
    playground insists."""
    if (given := one_constraint(s.schema, s.regex, s.grammar)) is None:
        return None
    kind, text = given
    if kind != "json":
        at_most(len(text), MAX_REGEX_CHARS if kind == "regex" else MAX_GRAMMAR_CHARS, f"the length of the {kind}")
        return kind, text
    schema = text.strip()
    at_most(len(schema), MAX_SCHEMA_TEXT_CHARS, "the length of the schema as typed (characters)")
    try:
        parsed = strict_json.loads(schema)
    except ValueError as exc:
        raise PlaygroundError(f"the schema is not valid JSON: {exc}") from None
    except RecursionError:
        raise PlaygroundError("the schema is nested too deeply") from None
    if parsed is True:  # any JSON value, as Run reads it: the engines take an object, {} (it was refused here)
        parsed = {}
    if not isinstance(parsed, dict):
        raise PlaygroundError("the schema must be a JSON object")
    return "json", parsed


def _gbnf(grammar: str) -> bool:
    """GBNF defines every rule with ::=, Lark with ':' (ConstraintSpec.gbnf's test: its module imports the compilers)."""
    return "::=" in grammar


def _depth(s) -> int:  # tokens drafted per round: the tree's depth when a tree is set, else k
    return len(tree_shape(s.tree)) if s.tree else s.k


def _messages(s) -> tuple[str, list]:
    """(prompt text, chat messages) as the playground sends them; the schema appended if asked."""
    text = s.prompt + (SCHEMA_HINT + s.schema.strip() if s.schema_in_prompt and s.schema.strip() else "")
    system = [{"role": "system", "content": s.system}] if s.system.strip() else []  # (spaces alone: none, as the run)
    return text, system + [{"role": "user", "content": text}]


def _request(s, constraint, engine: str) -> dict:
    """The OpenAI-compatible body for `engine` (Qwen's generation_config would set top_k 20, repetition 1.05)."""
    text, messages = _messages(s)  # sampling in full, so that the model's generation_config does not apply
    sampling = {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k if s.top_k > 0 else -1,
                "repetition_penalty": 1.0, "seed": s.seed}
    body = ({"model": _hub(s.target), "messages": messages, "max_completion_tokens": s.max_new_tokens} if _chat(s)
            else {"model": _hub(s.target), "prompt": text, "max_tokens": s.max_new_tokens}) | sampling
    if not _chat(s) and engine == "vllm":
        body["add_special_tokens"] = False  # the playground adds no BOS to raw text
    if _no_thinking(s, constraint):
        body["chat_template_kwargs"] = {"enable_thinking": False}
    if engine == "vllm" and s.think_budget and constraint and _reasoning(s.target, 0):
        body["thinking_token_budget"] = s.think_budget  # (then --reasoning-parser's </think> starts the constraint)
    if constraint and constraint[0] == "json":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "playground", "schema": constraint[1]}}
    if constraint and constraint[0] in ("regex", "grammar"):  # each engine's own extra field (SGLang's llguidance
        # reads its "ebnf" as Lark or GBNF, as the playground's does; vLLM's guidance backend reads "grammar" so too)
        field = "ebnf" if engine == "sglang" and constraint[0] == "grammar" else constraint[0]
        body |= {"structured_outputs": {field: constraint[1]}} if engine == "vllm" else {field: constraint[1]}
    return body


def _reasoning(target: str, engine: int) -> list[str]:
    """The reasoning parser flag for thinking models (engine 0 vLLM, 1 SGLang): constraints start after </think>."""
    names = next((names for prefix, names in REASONING.items() if target.startswith(prefix)), None)
    return ["--reasoning-parser", names[engine]] if names and not _never_thinks(target) else []


def _constrains_thinking(s, constraint) -> bool:
    """A thinking model held to its constraint from its first token (a budget of 0, not Qwen3 asked not to
    think): the playground's way, and the engines' only without --reasoning-parser (with it they constrain
    after </think>)."""
    return bool(constraint) and bool(_reasoning(s.target, 0)) and not _no_thinking(s, constraint) and not s.think_budget


def _parser_flag(s, constraint, engine: int) -> list[str]:
    return [] if _constrains_thinking(s, constraint) else _reasoning(s.target, engine)


def _vllm_command(s, kind, draft, constraint, notes) -> str:
    args = ["vllm", "serve", _hub(s.target)]
    spec = ({"method": "draft_model", "model": draft, "num_speculative_tokens": _depth(s)} if draft else
            {"method": "ngram", "num_speculative_tokens": s.k, "prompt_lookup_max": LOOKUP_MAX,
             "prompt_lookup_min": LOOKUP_MIN} if kind == "ngram" else None)
    if draft:
        spec |= _vllm_draft_options(s, draft, notes)
    if spec:
        args += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    if constraint:
        args += ["--structured-outputs-config", json.dumps({"backend": VLLM_BACKEND[s.backend]})]
    args += _parser_flag(s, constraint, 0)
    if s.tree and draft:
        notes.append(f"Token tree {s.tree}: vLLM's speculative_token_tree serves EAGLE-style proposers (and is "
                     f"gone from newer releases), so this drafts a chain of {_depth(s)} tokens.")
    return shlex.join(args)


def _vllm_draft_options(s, draft: str, notes: list) -> dict:
    """How vLLM's draft_model must draft this pair: across logits widths, or sampling as the playground does."""
    notes.append("method draft_model needs a vLLM release with pull request 24322 (merged in January 2026; 0.13.0 "
                 "refuses it).")
    if widths := _widths(s, draft):
        notes.append(f"The target's logits are {widths[0]:,} wide, the draft's {widths[1]:,}: vLLM refuses the pair "
                     "unless use_heterogeneous_vocab (drafts limited to the tokens both share, drawn greedily: at a "
                     "temperature above 0 the output keeps the target's law, its acceptance not this run's: usually lower). "
                     "That key needs a release with pull request 38174; an older one refuses it at start-up, as it does "
                     "any key it does not know.")
        return {"use_heterogeneous_vocab": True}
    if s.temperature > 0:  # vLLM's default drafts greedily and treats q as one-hot
        notes.append("draft_sample_method 'probabilistic' (the draft samples, and its probabilities enter the "
                     "acceptance test, as here) needs a release with pull request 40269; an older one refuses the key at "
                     "start-up: without it vLLM drafts greedily, the output keeping the target's law at a lower acceptance.")
        return {"draft_sample_method": "probabilistic"}
    return {}


def _sglang_command(s, kind, draft, constraint, notes) -> str:
    args = ["python", "-m", "sglang.launch_server", "--model-path", _hub(s.target)]
    if draft:
        steps, topk, tokens = _sglang_tree(s) if s.tree else (s.k, 1, s.k + 1)
        args += ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", draft,
                 "--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk),
                 "--speculative-num-draft-tokens", str(tokens)]  # tokens count the root: k + 1 for a chain
        if widths := _widths(s, draft):
            notes.append(f"The target's logits are {widths[0]:,} wide, the draft's {widths[1]:,} (one tokenizer, padded "
                         "apart): STANDALONE needs one vocabulary, and releases with pull request 23838 (merged in April "
                         "2026) compare the two models' vocab_size as the server starts and refuse this pair (releases "
                         "before it did not check). Pair the target with a draft of its width, or serve it with vLLM.")
    elif kind == "ngram":
        args += ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", str(s.k + 1),
                 "--speculative-ngram-max-bfs-breadth", "1",  # breadth 1 per match: near a chain of k
                 "--speculative-ngram-min-match-window-size", str(LOOKUP_MIN),  # (SGLang's default
                 "--speculative-ngram-max-match-window-size", str(LOOKUP_MAX)]  # matches up to 12 tokens)
        notes.append("SGLang's NGRAM drafts from a cache of all the tokens the server has seen (every "
                     "request), not only this prompt and output; matches of different lengths can still branch into a "
                     "small tree (breadth 1 is per match).")
    if constraint:
        args += ["--grammar-backend", s.backend]
    if constraint and constraint[0] == "grammar" and s.backend == "xgrammar" and not _gbnf(constraint[1]):
        notes.append("SGLang's xgrammar backend reads a request's ebnf as GBNF only (vLLM's reads Lark too): this Lark "
                     "grammar is refused there. Start the server with --grammar-backend llguidance, which reads it.")
    args += _parser_flag(s, constraint, 1)
    if s.tree and draft:
        notes.append(f"Token tree {s.tree}: SGLang grows its own tree (top-k per step, reranked to the best "
                     "nodes), " + ("as this dynamic tree does; the flags give it the same depth, top-k and budget."
                                   if tree_budget(s.tree) else
                                   "not this fixed shape; the flags give it the same depth, widest branching and size."))
    return shlex.join(args)


def _sglang_tree(s) -> tuple[int, int, int]:
    """(num_steps, eagle_topk, num_draft_tokens): SGLang keeps the best of topk + (steps-1)*topk^2 nodes
    (a dynamic tree here: the same rule, with its own budget)."""
    shape, budget = tree_shape(s.tree), tree_budget(s.tree)
    most = max(shape) * (1 + (len(shape) - 1) * max(shape))
    return len(shape), max(shape), min(budget or tree_nodes(shape), most) + 1


def _shared_notes(s, kind, draft, constraint, notes) -> None:
    """What each engine cannot express of the setting, in `notes` (engine -> its lines)."""
    def add(engines, text):
        for engine in engines:
            notes[engine].append(text)
    for write in (_drafting_notes, _model_notes, _sampling_notes, _thinking_notes, _prompt_notes):
        write(s, kind, draft, constraint, add, tuple(notes))


def _drafting_notes(s, kind, draft, constraint, add, every) -> None:
    """A draft, a draft length policy or a tree the engines have no option for."""
    serving = ("vllm", "sglang")
    if kind == "feature":
        add(serving, f"The feature draft {FEATURE_DRAFT} is an EAGLE-style head trained here, with no EAGLE "
                     "checkpoint format the engine loads: the command serves the target without speculation.")
        add(["transformers"], "transformers' assistant_model must be a whole model: the feature draft cannot "
                              "assist, so the snippet runs the target alone.")
    if kind == "reduced":
        add(every, f"The draft {REDUCED_DRAFT} has a reduced 8,192-token vocabulary (draft_vocab.safetensors); this "
                   "engine needs a draft sharing the target's vocabulary, so the target runs alone.")
    if kind == "cascade":
        add(every, f"The cascade (prompt lookup drafting for {draft}, which drafts for the target) has no "
                   f"equivalent here: {draft} alone drafts.")
    if s.policy in ("schedule", "confidence"):
        rule = ("+2 after a fully accepted round, -1 after a rejection, at most k, pausing where one guess fails"
                if s.policy == "schedule"
                else f"stop drafting below top probability {s.confidence}")
        instead = ("prompt lookup proposes what followed its match, up to k tokens, every round" if kind == "ngram"
                   else "the draft proposes a fixed number of tokens every round")
        add(serving + (("transformers",) if kind == "ngram" else ()),
            f"The '{s.policy}' draft length ({rule}) has no option here: {instead}.")
    if s.tree and kind in ("ngram", "none"):  # a feature or reduced draft: the target runs alone anyway (said above)
        add(every, f"The token tree {s.tree} needs a draft model; it is dropped.")
    elif tree_lookup(s.tree):
        add(every, f"The prompt-lookup branch (+{tree_lookup(s.tree)}) grafted on each tree has no option here: "
                   "the draft's tree is verified without it.")


def _model_notes(s, kind, draft, constraint, add, every) -> None:
    """Models that exist only here, or differ from their hub checkpoints."""
    models = {s.target, draft_model(s.draft)}
    if models & set(LOCAL):
        add(every, "demo-target and demo-draft are a toy pair trained for this playground; they exist only in this "
                   "repository (playground/models/demo_pair), loaded by that path from its root.")
    for name in sorted(models & set(HUB_IDS)):
        add(every, f"{name} is the playground's copy of {HUB_IDS[name]} converted from a Q4_1 GGUF; the hub "
                   "checkpoint loaded here has the original weights, so outputs can differ.")
    add(["transformers"], "The snippet loads each model in its checkpoint's dtype (dtype='auto'; the presets' are "
                          "bfloat16); the playground runs bfloat16 on a GPU and float32 on a CPU (a bfloat16 checkpoint's "
                          "linear weights kept in bfloat16 there, read exactly as float32; bfloat16 only for a model over "
                          "100M parameters stored in float16 or float32 where the CPU has bfloat16 arithmetic). Greedy text is the same only in the same dtype (two near-equal logits can swap: the demo "
                          "pair's differed within 48 tokens on two prompts): pass dtype=torch.float32 to reproduce a "
                          "float32 run.")


def _sampling_notes(s, kind, draft, constraint, add, every) -> None:
    """A seeded sampled run is the same distribution, not the same tokens."""
    if s.temperature > 0:
        add(every, "Sampling: the seed gives the same distribution, not the playground's exact tokens.")
        add(["sglang"], "SGLang reproduces a seeded sampled run only on a server started with "
                        "--enable-deterministic-inference (its seeded sampler and batch-invariant kernels; "
                        "docs/advanced_features/deterministic_inference.md); otherwise the same seed may give "
                        "other tokens from one request to the next.")


def _thinking_notes(s, kind, draft, constraint, add, every) -> None:
    """How each engine thinks where the playground constrains a reasoning model."""
    serving = ("vllm", "sglang")
    if _constrains_thinking(s, constraint):
        first = (f"the playground holds {s.target}'s first token to the constraint, and its chat template opens <think> "
                 "whatever it is asked, so that answer is written inside the model's unclosed thinking (give it a "
                 "thinking budget)" if _chat(s) and _always_thinks(s.target) else
                 f"the playground constrains {s.target}'s first token (no thinking)")
        add(serving, f"Thinking budget 0: {first}; so the command leaves --reasoning-parser out, as the engines then "
                     "constrain from the first token too (with it they start the constraint after </think>, and the model "
                     "thinks first; its reasoning then also comes apart from the answer).")
    if s.think_budget and constraint and _reasoning(s.target, 0):
        add(["vllm"], f"Thinking budget {s.think_budget}: sent as thinking_token_budget, which needs vLLM's reasoning "
                      "config: a release where --reasoning-parser does not set it up answers 400 (\"thinking_token_budget "
                      "is set but reasoning_config is not configured\"); give it --reasoning-config there. "
                      "max_completion_tokens counts the thinking too, as max new tokens does here.")
        add(["sglang"], f"Thinking budget {s.think_budget}: no option is emitted for it (SGLang's thinking budget: its "
                        "form still changes between releases); with --reasoning-parser the constraint starts after "
                        "</think>, but the model thinks as long as it likes, and max_completion_tokens counts that "
                        "thinking too: it may end before the answer.")
        add(["transformers"], "The snippet has no constraint, so it thinks and answers freely; there is no "
                              "thinking budget either.")
        if THINK_END in s.prompt + s.system:  # (the playground counts only the thinking the model writes)
            add(serving, f"The prompt holds {THINK_END}: an engine's reasoning parser may read it as thinking already "
                         "done (vLLM's judge that from the prompt's token ids too) and constrain from the first token, "
                         "where the playground lets the model think first.")
    if s.think_budget and constraint and _never_thinks(s.target):
        add(serving, f"Thinking budget {s.think_budget}: not carried over: {s.target} is an Instruct checkpoint of "
                     "Qwen3, which never writes <think>, so the command has no --reasoning-parser (with it the engines "
                     "would wait for a </think> that never comes, and never start the constraint). The playground "
                     f"lets it write {s.think_budget} free tokens before {THINK_END} and the constraint; these commands "
                     "constrain from the first token (a thinking budget of 0 is the same run on both sides).")
    elif s.think_budget and constraint and not _reasoning(s.target, 0):  # (a review: dropped without a word)
        add(serving, f"Thinking budget {s.think_budget}: not carried over. The export knows the reasoning parsers of "
                     f"Qwen3 and DeepSeek-R1 alone; where {s.target}'s tokenizer has {THINK_END}, the playground lets it "
                     f"think first and starts the constraint after {THINK_END}, while these commands constrain from the "
                     "first token (give the engine the reasoning parser that fits the model, and its thinking budget); "
                     "where it has none, the playground refuses the budget.")


def _prompt_notes(s, kind, draft, constraint, add, every) -> None:
    """A prompt sent as raw text (no chat template), and what SGLang adds to one."""
    if s.chat and not _chat(s):
        add(every, f"{s.target} has no chat template: the playground sent the prompt as raw text, and so does this.")
    if s.system.strip() and not _chat(s):  # (the web export dropped it without a word; the CLI said it: a review)
        add(every, "The system prompt is not sent: the playground gives it to the model only through a chat template, "
                   "and this setting sends raw text.")
    if _chat(s) and (spelled := TOKEN_LIKE.search(s.prompt + "\n" + s.system)):
        add(every, f"The prompt holds {spelled.group()!r}, which reads like one of the model's tokens: the playground "
                   "sends a chat message's text as text (those characters); apply_chat_template reads it as the token "
                   "itself, and so may an engine's chat endpoint, so the model may be given another prompt there.")
    if not _chat(s):
        add(["sglang"], "SGLang's completions endpoint tokenizes the prompt with the tokenizer's special tokens (a "
                        "BOS where the tokenizer adds one); the playground added none.")


def _transformers(s, kind, draft, notes) -> str:
    """A short script; every user value enters through repr()."""
    lines = ["import torch", "from transformers import AutoModelForCausalLM, AutoTokenizer", "",
             f"tokenizer = AutoTokenizer.from_pretrained({_hub(s.target)!r})",
             f"model = AutoModelForCausalLM.from_pretrained({_hub(s.target)!r}, dtype='auto', device_map='auto')"]
    kwargs = [f"max_new_tokens={s.max_new_tokens!r}", "repetition_penalty=1.0"]
    if draft:
        lines += _assistant_lines(s, draft, notes)
        kwargs.append("assistant_model=draft")
        if widths := _widths(s, draft):
            lines.append("draft.resize_token_embeddings(model.config.get_text_config().vocab_size)  # logits as wide as the target's")
            notes.append(f"The draft's logits ({widths[1]:,}) are padded to the target's width ({widths[0]:,}): "
                         "transformers refuses assistants of another width; the padded ids lie past the tokenizer's, and "
                         "a draft of one would be rejected.")
    elif kind == "ngram":
        kwargs += [f"prompt_lookup_num_tokens={s.k!r}", f"max_matching_ngram_size={LOOKUP_MAX!r}"]
    text, messages = _messages(s)
    thinking = ", enable_thinking=False" if _no_thinking(s, _constraint(s)) else ""
    lines += [f"messages = {messages!r}", "inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, "
              f"return_tensors='pt', return_dict=True{thinking}).to(model.device)"] if _chat(s) else [
              f"inputs = tokenizer({text!r}, return_tensors='pt', add_special_tokens=False).to(model.device)"]
    if s.temperature > 0:
        kwargs += ["do_sample=True", f"temperature={s.temperature!r}", f"top_p={s.top_p!r}", f"top_k={s.top_k!r}"]
    else:
        kwargs.append("do_sample=False")
    if _constraint(s):
        notes.append("transformers' generate has no JSON-schema, regex or grammar constraint built in: the snippet runs "
                     "unconstrained. xgrammar's contrib.hf.LogitsProcessor advances one matcher per call with no "
                     "rollback, so it cannot follow assistant_model's rejected drafts; llguidance ships no processor.")
    lines += [f"torch.manual_seed({s.seed!r})", f"out = model.generate(**inputs, {', '.join(kwargs)})",
              "print(tokenizer.decode(out[0, inputs['input_ids'].shape[1]:], skip_special_tokens=True))"]
    return "\n".join(lines) + "\n"


def _assistant_lines(s, draft, notes) -> list[str]:
    """The draft and its length policy: assisted generation reads them from the draft's generation_config."""
    # the playground's schedule starts at k/2; threshold 0 drafts exactly k (the default 0.4 stops early)
    k = max(1, _depth(s) // 2) if s.policy == "schedule" else _depth(s)
    schedule = "heuristic_transient" if s.policy == "schedule" else "constant"
    conf = s.confidence if s.policy == "confidence" else 0.0
    notes += {"schedule": ["transformers' heuristic schedule has no ceiling: it can draft more than k, and it never "
                           "pauses (the playground drafts nothing for a while after a guess refused at k=1 where guesses do not pay)."],
              "confidence": ["transformers retunes assistant_confidence_threshold during generation when "
                             "scikit-learn is installed.",
                             "transformers stops drafting after a token whose own probability is below the threshold "
                             "(the token it drew); the playground stops before a token when the draft's top probability "
                             "is below it: transformers drafts one more token at each early stop."]}.get(s.policy, [])
    if s.tree:
        notes.append(f"transformers drafts a chain: the token tree {s.tree} becomes a chain of {k} tokens.")
    return [f"draft = AutoModelForCausalLM.from_pretrained({draft!r}, dtype='auto', device_map='auto')",
            f"draft.generation_config.num_assistant_tokens = {k!r}",
            f"draft.generation_config.num_assistant_tokens_schedule = {schedule!r}",
            f"draft.generation_config.assistant_confidence_threshold = {conf!r}"]


def shell_block(e: Export, engine: str) -> str:
    """An engine's launch command, a blank line, and its request as a curl call to the local server,
    each option on a line of its own (a shell joins lines that end in a backslash)."""
    body = e.vllm_request if engine == "vllm" else e.sglang_request
    command = e.vllm_command if engine == "vllm" else e.sglang_command
    curl = ["curl", f"http://localhost:{PORTS[engine]}{e.endpoint}", "-H", "Content-Type: application/json",
            "-d", json.dumps(body)]
    return f"{_option_lines(shlex.split(command), lead=3)}\n\n{_option_lines(curl, lead=2)}\n"


def _option_lines(argv: list[str], lead: int) -> str:
    """argv as shell text: its first `lead` words on the first line (`vllm serve MODEL`, `python -m
    sglang.launch_server`), then each option with its values on a continuation line."""
    lines = [argv[:lead]]
    for word in argv[lead:]:
        if word.startswith("-"):
            lines.append([])
        lines[-1].append(word)
    return " \\\n  ".join(shlex.join(words) for words in lines)


def format_export(e: Export) -> str:
    """Markdown: that it serves the target alone where it does, each engine's launch command, its request as curl,
    the generate call, the notes."""
    def bullets(notes: list[str]) -> list[str]:
        return ["", "Not carried over, or different:", *(f"- {n}" for n in notes), ""] if notes else [""]

    parts = [f"> {e.alone}", ""] if e.alone else []
    for engine, title in (("vllm", "vLLM"), ("sglang", "SGLang")):
        parts += [f"### {title}", "```bash", shell_block(e, engine).rstrip("\n"), "```", *bullets(e.notes[engine])]
    parts += ["### transformers", "```python", e.transformers_code.rstrip("\n"), "```", *bullets(e.notes["transformers"])]
    return "\n".join(parts) + "\n"
