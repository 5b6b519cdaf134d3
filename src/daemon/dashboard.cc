// The dashboard page served at "/". One self-contained file: inline CSS and
// JS, charts drawn as SVG in the browser from /api/v1/status, no fonts,
// scripts or images from anywhere else (it must work in an air-gapped
// cluster and behind `kubectl port-forward`).
#include "state.h"

namespace gpuscaler::daemon {

const std::string& DashboardHtml() {
  static const std::string kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuscaler</title>
<style>
 body{font:14px system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
 header{background:#1d2430;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}
 header h1{font-size:18px;margin:0} header span{opacity:.85}
 main{padding:16px 20px;display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
 section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:12px 16px}
 h2{font-size:15px;margin:0 0 8px} .kpis{display:flex;gap:20px;flex-wrap:wrap}
 .kpi b{display:block;font-size:22px} .kpi small{color:#5b6575}
 table{border-collapse:collapse;width:100%;font-size:13px} th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #eceef2}
 th{cursor:pointer;background:#fafbfc} .spot{color:#b35c00} .od{color:#1f5fbf} .bad{color:#c0262d} .ok{color:#17813a}
 svg{width:100%;height:180px} .legend span{margin-right:12px} .mono{font-family:ui-monospace,monospace;font-size:12px}
</style></head><body>
<header><h1>gpuscaler</h1><span id="mode"></span><span id="clock"></span><span id="policy"></span><span id="health"></span></header>
<main>
<section style="grid-column:1/-1"><div class="kpis" id="kpis"></div></section>
<section><h2>Nodes</h2><svg id="chart-nodes" viewBox="0 0 600 180" preserveAspectRatio="none"></svg>
 <div class="legend"><span class="od">&#9632; on-demand</span><span class="spot">&#9632; spot</span></div></section>
<section><h2>Spend rate (USD/h)</h2><svg id="chart-cost" viewBox="0 0 600 180" preserveAspectRatio="none"></svg></section>
<section><h2>Waiting work</h2><svg id="chart-queue" viewBox="0 0 600 180" preserveAspectRatio="none"></svg>
 <div class="legend"><span style="color:#6b3fa0">&#9632; pending GPU units</span><span style="color:#17813a">&#9632; queued jobs</span></div></section>
<section><h2>Last decision</h2><div id="decision" class="mono"></div><h2 style="margin-top:12px">Signals</h2><div id="signals"></div></section>
<section style="grid-column:1/-1"><h2>Fleet</h2><table id="fleet"><thead><tr>
 <th>node</th><th>pool</th><th>type</th><th>zone</th><th>capacity</th><th>GPUs</th><th>USD/h</th><th>state</th><th>units</th></tr></thead><tbody></tbody></table></section>
<section style="grid-column:1/-1"><h2>Recent decisions</h2><table id="decisions"><thead><tr><th>id</th><th>time</th><th>summary</th><th>USD/h before</th><th>after</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
"use strict";
const $=id=>document.getElementById(id);
const esc=s=>String(s).replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c]));
const usd=v=>"$"+Number(v).toFixed(2);
function lines(svg,series,colors,stacked){
  const W=600,H=180,P=4,n=series[0].length;
  let max=1;
  for(let i=0;i<n;i++){let s=0;for(const a of series){s=stacked?s+a[i]:Math.max(s,a[i]);}max=Math.max(max,s);}
  const x=i=>P+(W-2*P)*(n<=1?0:i/(n-1)), y=v=>H-P-(H-2*P)*v/max;
  let out="", base=new Array(n).fill(0);
  series.forEach((a,k)=>{
    let d="";
    for(let i=0;i<n;i++){const v=stacked?base[i]+a[i]:a[i];d+=(i?"L":"M")+x(i).toFixed(1)+" "+y(v).toFixed(1);}
    if(stacked){let back="";for(let i=n-1;i>=0;i--)back+="L"+x(i).toFixed(1)+" "+y(base[i]).toFixed(1);
      out+='<path d="'+d+back+'Z" fill="'+colors[k]+'" fill-opacity=".55" stroke="'+colors[k]+'"/>';
      for(let i=0;i<n;i++)base[i]+=a[i];}
    else out+='<path d="'+d+'" fill="none" stroke="'+colors[k]+'" stroke-width="2"/>';
  });
  out+='<text x="6" y="14" font-size="12" fill="#5b6575">max '+(Math.round(max*100)/100)+'</text>';
  svg.innerHTML=out;
}
function sortable(table){
  table.querySelectorAll("th").forEach((th,i)=>th.onclick=()=>{
    const body=table.tBodies[0],rows=[...body.rows],dir=th.dataset.dir==="asc"?-1:1;th.dataset.dir=dir>0?"asc":"desc";
    rows.sort((a,b)=>{const p=a.cells[i].textContent,q=b.cells[i].textContent,x=parseFloat(p.replace("$","")),y=parseFloat(q.replace("$",""));
      return dir*(isNaN(x)||isNaN(y)?p.localeCompare(q):x-y);});
    rows.forEach(r=>body.appendChild(r));});
}
sortable($("fleet"));sortable($("decisions"));
async function refresh(){
  try{
    const s=await (await fetch("api/v1/status")).json();
    $("mode").textContent=s.mode+(s.mode==="demo"?" ("+s.speed+"x)":"")+(s.paused?" — PAUSED":"");
    $("clock").textContent=s.time?("at "+s.time.replace("T"," ").replace("Z"," UTC")):"waiting for the first tick";
    $("policy").textContent="policy "+(s.policy.name||"?")+" "+(s.policy.hash||"").slice(0,8)+(s.policy.last_errors?" (last reload rejected)":"");
    $("health").innerHTML=s.ready?'<span class="ok">ready</span>':'<span class="bad">not ready</span>';
    const spot=s.nodes.filter(n=>n.capacity_type==="spot").length,gpus=s.nodes.reduce((a,n)=>a+n.gpus,0);
    const k=[["nodes",s.nodes.length+" ("+spot+" spot)"],["GPUs",gpus],["spend rate",usd(s.cost_usd_per_hour)+"/h"],
      ["planned rate",usd(s.predicted_cost_usd_per_hour)+"/h"],["month to date",usd(s.month_to_date_usd)],
      ["pending units",s.pending_units],["queued jobs",s.queued_jobs<0?"–":s.queued_jobs],["ticks",s.ticks]];
    $("kpis").innerHTML=k.map(([a,b])=>'<div class="kpi"><b>'+esc(b)+'</b><small>'+esc(a)+'</small></div>').join("");
    const ser=s.series;
    if(ser.length){
      lines($("chart-nodes"),[ser.map(p=>p.nodes-p.spot_nodes),ser.map(p=>p.spot_nodes)],["#1f5fbf","#e07b00"],true);
      lines($("chart-cost"),[ser.map(p=>p.usd_per_hour)],["#1d2430"],false);
      lines($("chart-queue"),[ser.map(p=>p.pending_units),ser.map(p=>Math.max(0,p.queued_jobs))],["#6b3fa0","#17813a"],false);
    }
    $("decision").innerHTML=esc(s.last_decision.summary||"no decision yet")+
      (s.scale_down_blocked_classes.length?'<div class="bad">scale-down blocked (stale signals): '+esc(s.scale_down_blocked_classes.join(", "))+'</div>':"")+
      (s.errors.length?'<div class="bad">'+s.errors.map(esc).join("<br>")+'</div>':"");
    $("signals").innerHTML=s.signals.length?'<table>'+s.signals.map(g=>'<tr><td>'+esc(g.class)+'</td><td>'+esc(g.kind)+'</td><td class="'+(g.state==="ok"?"ok":"bad")+'">'+esc(g.state)+'</td><td>'+(g.value===null?"–":g.value)+'</td></tr>').join("")+'</table>':
      '<small>'+(s.mode==="demo"?"demo load: the simulator's job queue":"no signals configured")+'</small>';
    const tb=$("fleet").tBodies[0];
    tb.innerHTML=s.nodes.map(n=>'<tr><td class="mono">'+esc(n.id)+'</td><td>'+esc(n.pool)+'</td><td>'+esc(n.instance_type)+'</td><td>'+esc(n.zone)+
      '</td><td class="'+(n.capacity_type==="spot"?"spot":"od")+'">'+esc(n.capacity_type)+'</td><td>'+n.gpus+'</td><td>'+usd(n.usd_per_hour)+'</td><td>'+esc(n.state)+'</td><td>'+n.running_units+'</td></tr>').join("");
    const d=await (await fetch("api/v1/decisions?limit=15")).json();
    $("decisions").tBodies[0].innerHTML=(d.decisions||[]).map(r=>'<tr><td><a href="decisions/'+r.id+'" title="replay: the plan from the stored input">'+r.id+'</a></td><td>'+esc(r.time)+'</td><td class="mono">'+esc(r.summary)+'</td><td>'+usd(r.cost_before_usd_per_hour)+'</td><td>'+usd(r.cost_after_usd_per_hour)+'</td></tr>').join("");
  }catch(e){$("health").innerHTML='<span class="bad">'+esc(e)+'</span>';}
}
refresh();setInterval(refresh,2000);
</script></body></html>
)HTML";
  return kPage;
}

}  // namespace gpuscaler::daemon
