"""Laying a report's data out as ONE self-contained HTML file: plotly.js inlined, no fonts, no
network at view time. Episodes travel gzip-compressed (base64) and are unpacked by the browser
(``DecompressionStream``), which keeps a 2,000-episode run well under 10 MB."""

from __future__ import annotations

import base64
import gzip
import html
import itertools
import json
import time

from termrl.report import data

_IDS = itertools.count()
SECTIONS = [("headline", "Headline"), ("rewards", "Rewards"), ("compute", "Compute"), ("hacking", "Hacking"),
            ("failures", "Failures"), ("behaviour", "Behaviour"), ("tokens", "Tokens"),
            ("trajectories", "Trajectories")]


def render(runs, tokenizers=()) -> str:
    """The whole page for ``runs`` (one, or several side by side); ``tokenizers``: more tokenizers
    (directories, tokenizer.json files, ``quickstart``) for the Tokens section, beside the runs' own."""
    import plotly.graph_objects as go  # heavy: plotly
    from plotly.offline import get_plotlyjs  # heavy: plotly

    figures: list[tuple[str, dict]] = []

    def fig(div: str, figure: go.Figure, height: int = 320) -> str:
        figure.update_layout(height=height, margin=dict(l=50, r=20, t=40, b=40), template="plotly_white")
        figures.append((div, json.loads(figure.to_json())))
        return f'<div class="plot" id="{div}"></div>'

    head = data.headline(runs)
    parts = {
        "headline": _headline(runs, head),
        "rewards": _rewards(runs, fig),
        "compute": _compute(runs, fig),
        "hacking": _hacking(runs),
        "failures": _failures(runs, fig),
        "behaviour": _behaviour(runs, fig),
        "tokens": _tokens(data.tokens(runs, tokenizers)),
        "trajectories": _trajectories(),
    }
    body = "\n".join(f'<section id="{sid}"><h2>{title}</h2>{parts[sid]}</section>' for sid, title in SECTIONS)
    episodes = data.episodes(runs)
    packed = base64.b64encode(gzip.compress(json.dumps(episodes, separators=(",", ":")).encode(), 6)).decode()
    nav = " ".join(f'<a href="#{sid}">{title}</a>' for sid, title in SECTIONS)
    title = "termrl report: " + ", ".join(r.name for r in runs)
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>"
            f"<header><h1>{_e(title)}</h1><nav>{nav}</nav><p class=small>written {data.utc(time.time())} "
            f"by termrl report from {', '.join(_e(str(r.path)) for r in runs)}</p></header>{body}"
            f'<script id="figures" type="application/json">{_script_json([[d, f] for d, f in figures])}</script>'
            f'<script id="episodes-data" type="text/plain">{packed}</script>'
            f"<script>{JS}</script></body></html>")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _script_json(value) -> str:
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def _num(x, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def _table(headers: list[str], rows: list[list], cls: str = "", filt: bool | None = None) -> str:
    """A sortable table (click a header) with a text box filtering its rows (``filt``; default:
    when it has more than five)."""
    filt = len(rows) > 5 if filt is None else filt
    tid = f"table-{next(_IDS)}"
    box = f'<input class="filter" data-table="{tid}" placeholder="filter rows...">' if filt else ""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'{box}<table id="{tid}" class="sortable {cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _filled(headers: list[str], rows: list[list]) -> tuple[list[str], list[list]]:
    """``headers`` and ``rows`` without the columns empty in every row.

    >>> _filled(["a", "b", "c"], [["1", "", 3], ["2", "", ""]])
    (['a', 'c'], [['1', 3], ['2', '']])
    """
    keep = [i for i in range(len(headers)) if any(str(row[i]) != "" for row in rows)]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _ep_link(ref: str, text: str | None = None) -> str:
    return f'<a href="#ep={_e(ref)}" class="ep">{_e(text or ref.split("/", 1)[-1])}</a>'


# ------------------------------------------------------------------------------------------ sections


def _headline(runs, head: dict) -> str:
    rows = []
    for r in head["rows"]:
        ci = r["interval"]
        passk = ", ".join(f"pass@{k} {_pct(v)}" + (f" ({_pct(r['pass@k_interval'][k][0])} - "
                                                     f"{_pct(r['pass@k_interval'][k][1])})"
                                                     if r["pass@k_interval"].get(k) else "")
                          for k, v in r["pass@k"].items() if k != "1")
        rows.append([_e(r["run"]), _e(r["kind"]), "" if r["part"] == "episodes" else _e(r["part"]), r["episodes"],
                     r["errors"], f'<b>{_pct(r["pass@1"])}</b>' if r["pass@1"] is not None else "",
                     f"{_pct(ci[0])} - {_pct(ci[1])}" if ci else "", _e(passk), _num(r["mean_reward"]),
                     _e(r["reward_scale"] or "")])
    out = _table(*_filled(["run", "kind", "evaluated on", "episodes", "harness errors", "pass@1", "95% interval",
                           "pass@k", "mean reward", "reward range"], rows), "headline")
    rows = [[_e(s["setting"]), *map(_e, s["values"])] for s in data.settings(runs)]
    if rows:
        out += "<h3>settings</h3>" + _table(["setting", *(r.name for r in runs)], rows, filt=False)
    for c in head["comparisons"]:
        pairs = c.get("paired")
        same = (f'; paired over the {pairs["episodes"]} episodes both played: {pairs["gained"]} failed before '
                f'and passed after, {pairs["lost"]} the other way, exact McNemar p = {pairs["mcnemar_p"]:.3g}'
                if pairs else "")
        out += (f'<p class="comparison">{_e(c["b"])} against {_e(c["a"])}: pass@1 difference '
                f'<b>{100 * c["difference"]:+.1f} points</b>, two-proportion z = {c["z"]:.2f}, p = {c["p_value"]:.3g}'
                f'{same}</p>')
    for key, title in (("splits", "by split"), ("categories", "by category"), ("families", "by family")):
        names = sorted({n for r in head["rows"] for n in r[key]})
        if not names:
            continue
        table_rows = [[_e(n)] + [f'{_pct(r[key][n]["pass@1"])} ({r[key][n]["passed"]}/{r[key][n]["episodes"]})'
                                 if n in r[key] else "" for r in head["rows"]] for n in names]
        out += f"<h3>pass@1 {title}</h3>" + _table([{"splits": "split", "categories": "category",
                                                   "families": "family"}[key]]
                                                  + [r["run"] for r in head["rows"]], table_rows)
    for run in runs:
        if run.results and any(k.startswith("heldout_pass_rate") for k in run.results):
            res = run.results
            out += (f'<p>{_e(run.name)} (training run): held-out pass rate before '
                    f'{_pct(res.get("heldout_pass_rate_before"))}, after {_pct(res.get("heldout_pass_rate_after"))}, '
                    f'p = {_num(res.get("heldout_p_value"))}; transfer before {_pct(res.get("transfer_pass_rate_before"))}, '
                    f'after {_pct(res.get("transfer_pass_rate_after"))}</p>')
    return out


def _rewards(runs, fig) -> str:
    import plotly.graph_objects as go  # heavy: plotly

    rew = data.rewards(runs)
    out = ""
    total = go.Figure([go.Histogram(x=v["total"], name=name, opacity=0.6) for name, v in rew.items()])
    total.update_layout(title="total reward per episode", barmode="overlay", xaxis_title="reward")
    out += fig("fig-reward-total", total)
    names = sorted({c for v in rew.values() for c in v["components"]})
    if names:
        comp = go.Figure()
        for run_name, v in rew.items():
            for c in names:
                comp.add_trace(go.Box(y=v["components"].get(c, []), name=f"{c}" if len(rew) == 1 else f"{c} ({run_name})",
                                      boxmean=True))
        comp.update_layout(title="component values per episode", showlegend=False)
        out += fig("fig-reward-components", comp, 360)
    for run in runs:
        curves = data.training_curves(run)
        for group, tags in curves.items():
            g = go.Figure([go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=tag)
                           for tag, pts in sorted(tags.items())])
            g.update_layout(title=f"{run.name}: {group.replace('_', ' ')} over training steps", xaxis_title="step")
            out += fig(f"fig-train-{_slug(run.name)}-{group}", g)
        sched = data.schedules(run.meta.get("spec"))
        if sched:
            s = go.Figure([go.Scatter(x=[p for p, _ in pts], y=[w for _, w in pts], mode="lines+markers", name=name)
                           for name, pts in sched.items()])
            s.update_layout(title=f"{run.name}: scheduled weights of spec {run.meta.get('spec')} over training progress",
                            xaxis_title="progress")
            out += fig(f"fig-schedule-{_slug(run.name)}", s)
    return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def _compute(runs, fig) -> str:
    import plotly.graph_objects as go  # heavy: plotly

    comp = data.compute(runs)
    bars = go.Figure()
    phases = list(dict.fromkeys(p for v in comp["runs"].values() for p in v["shares"]))
    for phase in phases:
        bars.add_trace(go.Bar(y=list(comp["runs"]), x=[v["shares"].get(phase, 0) for v in comp["runs"].values()],
                              name=phase, orientation="h"))
    for phase, share in comp["quoted"].items():
        bars.add_trace(go.Bar(y=["quoted (GPU cluster)"], x=[share], name=f"{phase} (quoted)", orientation="h"))
    bars.update_layout(barmode="stack", title="where the time went (share of each run's time)", xaxis_tickformat=".0%")
    rows = [[_e(name), _num(v["wall_s"], 4), _num(v["episodes_per_hour"], 4),
             _e(", ".join(f"{p} {s:.0%}" for p, s in v["shares"].items()))] for name, v in comp["runs"].items()]
    return (fig("fig-compute", bars, 260 + 30 * len(runs))
            + _table(["run", "wall s", "episodes per hour", "split"], rows)
            + "<p class=small>Quoted split: 40% generation, 30% environment, 20% reward model, 10% gradient. "
              "An eval run's split sums its episodes' own timings (they overlap in wall time).</p>")


def _hacking(runs) -> str:
    hk = data.hacking(runs)
    rows = [[_e(f["detector"]), f'<span class="sev-{_e(f["severity"])}">{_e(f["severity"])}</span>', f["count"],
             " ".join(_ep_link(r) for r in f["episodes"][:10]) + (" ..." if f["count"] > 10 else "")]
            for f in hk["findings"]]
    out = _table(["detector", "severity", "episodes", "examples"], rows, filt=True) if rows else \
        "<p>No hack detector fired on these episodes.</p>"
    for name, m in hk["audits"].items():
        out += (f"<h3>audit {_e(name)}: task x exploit</h3><p>exploitable tasks: {len(m['exploitable'])} "
                f"{_e(', '.join(m['exploitable']))}; test-weak tasks: {len(m['test_weak'])} {_e(', '.join(m['test_weak']))}. "
                "A cell is the exploit's reward minus doing nothing's (worst progress); red: it pays, "
                "amber: its tests passed, grey: caught or no gain.</p>")
        head = "".join(f'<th class="rot"><span>{_e(x)}</span></th>' for x in m["exploits"])
        body = ""
        for task in m["tasks"]:
            cells = ""
            for x in m["exploits"]:
                c = m["cells"].get(f"{task}|{x}")
                if c is None:
                    cells += "<td></td>"
                    continue
                adv = c["advantage"]
                cls = "err" if c["error"] else "pays" if adv is not None and adv > 0 else \
                    "passes" if c["tests_passed"] else "safe"
                tip = f"{x}: advantage {adv}, tests passed {c['tests_passed']}, caught by {', '.join(c['detected_by']) or '-'}"
                cells += f'<td class="cell {cls}" title="{_e(tip)}">{"" if adv is None else f"{adv:+.2f}"}</td>'
            body += f"<tr><th>{_e(task)}</th>{cells}</tr>"
        out += f'<div class="matrix"><table class="audit"><thead><tr><th>task</th>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    return out


def _failures(runs, fig) -> str:
    import plotly.graph_objects as go  # heavy: plotly

    fl = data.failures(runs)
    classes = go.Figure([go.Bar(x=list(v["error_classes"]), y=list(v["error_classes"].values()), name=name)
                         for name, v in fl.items()])
    classes.update_layout(title="error classes (episodes)", barmode="group")
    endings = go.Figure([go.Bar(x=list(v["endings"]), y=list(v["endings"].values()), name=name) for name, v in fl.items()])
    endings.update_layout(title="endings", barmode="group")
    out = fig("fig-error-classes", classes) + fig("fig-endings", endings, 280)
    rows = []
    for name, v in fl.items():
        for g in v["clusters"]:
            rows.append([_e(name), _e(g["error_class"]), _e(g["first_failure"]), g["count"],
                         _e(", ".join(f"{k} {n}" for k, n in g["endings"].items())),
                         " ".join(_ep_link(ex["ref"]) for ex in g["examples"])])
    out += "<h3>bad-case clusters (error class x first failure)</h3>" + \
        (_table(["run", "error class", "first failure", "episodes", "endings", "examples"], rows, filt=True)
         if rows else "<p>No failed episode.</p>")
    return out


def _behaviour(runs, fig) -> str:
    import plotly.graph_objects as go  # heavy: plotly

    bh = data.behaviour(runs)
    acts = go.Figure([go.Histogram(x=v["actions_per_episode"], name=n, opacity=0.6) for n, v in bh.items()])
    acts.update_layout(title="actions per episode", barmode="overlay")
    heads = go.Figure([go.Histogram(x=v["distinct_heads_per_episode"], name=n, opacity=0.6) for n, v in bh.items()])
    heads.update_layout(title="distinct command heads per episode", barmode="overlay")
    lengths = go.Figure([go.Histogram(x=v["reply_chars"], name=n, opacity=0.6) for n, v in bh.items()])
    lengths.update_layout(title="reply length (characters)", barmode="overlay")
    top = go.Figure([go.Bar(x=list(v["top_heads"]), y=list(v["top_heads"].values()), name=n) for n, v in bh.items()])
    top.update_layout(title="most used command heads", barmode="group")
    rows = [[_e(n), v["replies"], _pct(v["format_error_rate"]), v["distinct_heads"]] for n, v in bh.items()]
    return (_table(["run", "replies", "format-error rate", "distinct command heads over the run"], rows)
            + fig("fig-actions", acts) + fig("fig-heads", heads) + fig("fig-top-heads", top) + fig("fig-reply-length", lengths))


def _tokens(reports: list[dict]) -> str:
    if not reports:
        return ("<p class=small>No tokenizer: none of the runs keeps a model's tokenizer "
                "(final/, rl/, sft/, model-init/); add one with <code>termrl report --tokenizer DIR</code>.</p>")
    classes = list(reports[0]["classes"])
    rows = [[_e(cls), *(f'{r["classes"][cls]["tokens_per_byte"]:.3f} ({r["classes"][cls]["tokens_per_char"]:.3f})'
                        if r["classes"][cls]["tokens_per_byte"] is not None else "-" for r in reports)]
            for cls in classes]
    rows += [[f"longest one-token run of {kind}", *(r["longest_one_token_run"][kind] for r in reports)]
             for kind in ("spaces", "tabs", "newlines")]
    rows.append(["tokens per episode (mean)", *(f'{r["episode_tokens_mean"]:,.0f} over {r["episodes"]}'
                                                if r["episode_tokens_mean"] else "-" for r in reports)])
    headers = ["class", *(f'{_e(r["tokenizer"])} ({r["vocab_size"]:,} tokens)' for r in reports)]
    return (_table(headers, rows)
            + "<p class=small>Tokens per UTF-8 byte (tokens per character) of termrl's corpus (code, English, "
              "Chinese, Chinese mixed with code, shell sessions, tracebacks, whitespace, digits) and of these runs' "
              "own episodes (replies, observations); episode cost: their chats through each tokenizer's chat "
              "template. <code>termrl tokenizers report</code> gives the same figures.</p>")


def _trajectories() -> str:
    return """
<div class="controls">
  <select id="f-status"><option value="all">all</option><option value="passed">passed</option>
    <option value="failed">failed</option><option value="flagged">flagged</option>
    <option value="harness">harness errors</option></select>
  <select id="f-class"><option value="">any error class</option></select>
  <select id="f-task"><option value="">any task</option></select>
  <input id="f-text" placeholder="search instructions, replies, observations...">
  <span id="f-count"></span>
</div>
<div class="viewer"><div class="list"><table id="episodes" class="sortable"><thead><tr><th>run</th><th>part</th>
<th>task</th><th>episode</th><th>passed</th><th>reward</th><th>ending</th><th>error classes</th><th>flagged</th></tr></thead>
<tbody></tbody></table></div><div id="episode-detail" class="detail"><p>Click an episode.</p></div></div>"""


CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#20324a;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
header nav a{color:#cfe3ff;margin-right:14px}.small{font-size:12px;color:#666}header .small{color:#cbd5e1}
section{background:#fff;margin:16px 24px;padding:8px 20px 16px;border:1px solid #e3e6ea;border-radius:6px}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}h3{font-size:15px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}th,td{border:1px solid #e3e6ea;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f1f4f8;cursor:pointer}table.audit th{cursor:default}
.comparison{font-size:15px}.sev-high{color:#b00020;font-weight:bold}.sev-medium{color:#a15c00}
.cell{text-align:right;font-variant-numeric:tabular-nums}.pays{background:#f8b4b4}.passes{background:#fde68a}
.safe{background:#eef1f4;color:#555}.err{background:#ddd}.matrix{overflow:auto;max-height:600px}
th.rot{height:140px;white-space:nowrap;vertical-align:bottom}th.rot span{writing-mode:vertical-rl;transform:rotate(180deg)}
.controls{margin:8px 0}.controls *{margin-right:8px}.viewer{display:flex;gap:16px}.list{flex:1;max-height:640px;overflow:auto}
.detail{flex:1.2;max-height:640px;overflow:auto;border-left:3px solid #20324a;padding-left:12px}
#episodes tbody tr{cursor:pointer}#episodes tbody tr:hover{background:#eef4ff}#episodes tr.sel{background:#dbe8ff}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px;border-radius:4px;margin:4px 0}
.step{border-top:1px dashed #ccc;margin-top:8px}.ok{color:#17663a;font-weight:bold}.bad{color:#b00020;font-weight:bold}
input.filter{margin:4px 0;width:280px}
"""

JS = r"""
(function(){
'use strict';
function esc(s){return String(s==null?'':s).replace(/[&<>"']/g,function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c];});}
// figures
JSON.parse(document.getElementById('figures').textContent).forEach(function(f){
  var el=document.getElementById(f[0]); if(el){Plotly.newPlot(el,f[1].data,f[1].layout,{responsive:true,displaylogo:false});}
});
// sortable tables and row filters
function sortBy(table,col){
  var body=table.tBodies[0]; if(!body)return; var rows=Array.prototype.slice.call(body.rows);
  var dir=table.getAttribute('data-dir')==='asc'&&table.getAttribute('data-col')==String(col)?'desc':'asc';
  rows.sort(function(a,b){var x=a.cells[col]?a.cells[col].textContent:'',y=b.cells[col]?b.cells[col].textContent:'';
    var nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return dir==='asc'?c:-c;});
  rows.forEach(function(r){body.appendChild(r);}); table.setAttribute('data-dir',dir); table.setAttribute('data-col',col);
}
function wireSort(table){Array.prototype.forEach.call(table.tHead?table.tHead.rows[0].cells:[],function(th,i){
  th.addEventListener('click',function(){sortBy(table,i);});});}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),wireSort);
Array.prototype.forEach.call(document.querySelectorAll('input.filter'),function(box){
  box.addEventListener('input',function(){var t=document.getElementById(box.getAttribute('data-table'));var q=box.value.toLowerCase();
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
});
// episodes
var EPISODES=[],BYREF={};
function unpack(){
  var b64=document.getElementById('episodes-data').textContent.trim();
  var bin=atob(b64),bytes=new Uint8Array(bin.length);for(var i=0;i<bin.length;i++)bytes[i]=bin.charCodeAt(i);
  var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text().then(JSON.parse);
}
function matches(e){
  var st=document.getElementById('f-status').value,cl=document.getElementById('f-class').value,
      tk=document.getElementById('f-task').value,q=document.getElementById('f-text').value.toLowerCase();
  if(st==='passed'&&!e.passed)return false; if(st==='failed'&&(e.passed||e.harness_error))return false;
  if(st==='flagged'&&!e.flagged)return false; if(st==='harness'&&!e.harness_error)return false;
  if(cl&&e.classes.indexOf(cl)<0)return false; if(tk&&e.task!==tk)return false;
  if(q){var hay=(e.instruction+' '+e.task+' '+e.id+' '+e.steps.map(function(s){return s.reply+' '+s.observation;}).join(' ')).toLowerCase();
    if(hay.indexOf(q)<0)return false;}
  return true;
}
function fill(){
  var body=document.querySelector('#episodes tbody'),shown=0,html=[];
  EPISODES.forEach(function(e){if(!matches(e))return;shown++;
    html.push('<tr data-ref="'+esc(e.ref)+'"><td>'+esc(e.run)+'</td><td>'+esc(e.part)+'</td><td>'+esc(e.task)+'</td><td>'+esc(e.id)+
      '</td><td>'+(e.passed?'<span class=ok>yes</span>':'<span class=bad>no</span>')+'</td><td>'+(e.reward==null?'':e.reward.toFixed(3))+
      '</td><td>'+esc(e.ending)+'</td><td>'+esc(e.classes.join(', '))+'</td><td>'+(e.flagged?'yes':'')+'</td></tr>');});
  body.innerHTML=html.join('');
  document.getElementById('f-count').textContent=shown+' of '+EPISODES.length+' episodes';
}
function openEpisode(ref){
  var e=BYREF[ref],d=document.getElementById('episode-detail'); if(!e){d.innerHTML='<p>No episode '+esc(ref)+'.</p>';return;}
  Array.prototype.forEach.call(document.querySelectorAll('#episodes tr.sel'),function(r){r.classList.remove('sel');});
  var row=document.querySelector('#episodes tr[data-ref="'+(window.CSS&&CSS.escape?CSS.escape(ref):ref)+'"]'); if(row)row.classList.add('sel');
  var h=['<h3 id="episode-title">'+esc(e.id)+'</h3><p>run '+esc(e.run)+' ('+esc(e.part)+'), task '+esc(e.task)+', '+
    (e.passed?'<span class=ok>passed</span>':'<span class=bad>failed</span>')+', reward '+(e.reward==null?'none':e.reward.toFixed(3))+', ending '+esc(e.ending)+
    (e.error?', error '+esc(e.error):'')+'</p><h4>instruction</h4><pre>'+esc(e.instruction)+'</pre>'];
  e.steps.forEach(function(s,i){h.push('<div class=step><h4>step '+(i+1)+': '+esc(s.action)+'</h4><p class=small>generation '+s.gen_s+
    ' s, environment '+s.env_s+' s'+(s.tokens!=null?', '+s.tokens+' tokens':'')+(s.prompt_tokens!=null?', prompt '+s.prompt_tokens+' tokens':'')+
    (s.exit_code!=null?', exit '+s.exit_code:'')+(s.format_error?', format error: '+esc(s.format_error):'')+'</p><pre class=reply>'+esc(s.reply)+
    '</pre><pre class=observation>'+esc(s.observation)+'</pre></div>');});
  if(e.tests.length){h.push('<h4>tests</h4><table><tr><th>test</th><th>outcome</th><th>class</th><th>message</th></tr>'+
    e.tests.map(function(t){return '<tr><td>'+esc(t.id)+'</td><td>'+esc(t.outcome)+'</td><td>'+esc(t['class'])+'</td><td>'+esc(t.message)+'</td></tr>';}).join('')+'</table>');}
  h.push('<p>error classes: '+esc(e.classes.join(', ')||'none')+'</p>');
  var comps=Object.keys(e.components);
  if(comps.length){h.push('<h4>reward breakdown</h4><table><tr><th>component</th><th>weight</th><th>value</th><th>contribution</th></tr>'+
    comps.map(function(k){var c=e.components[k];return '<tr><td>'+esc(k)+'</td><td>'+esc(c.weight)+'</td><td>'+esc(c.value)+'</td><td>'+esc(c.contribution)+'</td></tr>';}).join('')+'</table>');}
  h.push('<h4>findings</h4>'+(e.findings.length?'<ul>'+e.findings.map(function(f){return '<li class="sev-'+esc(f.severity)+'">'+esc(f.kind)+' ('+esc(f.severity)+'): '+esc(f.message)+'</li>';}).join('')+'</ul>':'<p>none</p>'));
  d.innerHTML=h.join('');
}
function fromHash(){var m=/ep=([^&]+)/.exec(location.hash);if(m){var ref=decodeURIComponent(m[1]);openEpisode(ref);document.getElementById('trajectories').scrollIntoView();}}
unpack().then(function(eps){
  EPISODES=eps; eps.forEach(function(e){BYREF[e.ref]=e;});
  var classes={},tasks={}; eps.forEach(function(e){e.classes.forEach(function(c){classes[c]=1;});tasks[e.task]=1;});
  var fc=document.getElementById('f-class'),ft=document.getElementById('f-task');
  Object.keys(classes).sort().forEach(function(c){var o=document.createElement('option');o.value=c;o.textContent=c;fc.appendChild(o);});
  Object.keys(tasks).sort().forEach(function(t){var o=document.createElement('option');o.value=t;o.textContent=t;ft.appendChild(o);});
  ['f-status','f-class','f-task'].forEach(function(id){document.getElementById(id).addEventListener('change',fill);});
  document.getElementById('f-text').addEventListener('input',fill);
  document.querySelector('#episodes tbody').addEventListener('click',function(ev){var tr=ev.target.closest('tr');if(tr)openEpisode(tr.getAttribute('data-ref'));});
  fill(); fromHash(); window.addEventListener('hashchange',fromHash);
  document.body.setAttribute('data-ready','1');
}).catch(function(err){document.getElementById('episode-detail').textContent='could not read the episodes: '+err;throw err;});
})();
"""
