import Foundation

/// The fixed parts of the HTML report: the head with its inline style, the summary and filter bar, and the inline
/// script. The Content-Security-Policy lets the page load nothing but `data:` images and its own thumbnail folder
/// (`'self'`: files beside it), so opening it never makes a request to a host, whatever a file name or server
/// message in it says.
enum HTMLPage {
    static func head(title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data: 'self'; \
        style-src 'unsafe-inline'; script-src 'unsafe-inline'">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="ingest">
        <title>\(htmlEscape(title))</title>
        <style>\(style)</style></head>
        <body>

        """
    }

    static let style = """
        :root{--ok:#1a7f37;--fail:#cf222e;--skip:#9a6700;--line:#d0d7de;--mute:#57606a;font:14px/1.4 system-ui,sans-serif}
        body{margin:0;background:#f6f8fa;color:#1f2328}
        header{background:#fff;border-bottom:1px solid var(--line);padding:12px 20px}
        h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:18px 20px 8px}
        .counts{display:flex;gap:16px;flex-wrap:wrap;align-items:baseline}
        .counts span{font-size:13px;color:var(--mute)}.counts b{font-size:22px;color:#1f2328}
        .counts .failed b{color:var(--fail)}.counts .passed b{color:var(--ok)}.counts .skipped b{color:var(--skip)}
        .charts{display:flex;gap:24px;flex-wrap:wrap;margin-top:8px}
        .hist{margin:0;height:auto;background:none;display:block}.hist figcaption{font-size:12px;color:var(--mute)}
        .hist svg{width:360px;height:96px}.hist rect{fill:#54aeff}
        .hist text{font-size:10px;text-anchor:middle;fill:var(--mute)}.hist text.n{fill:#1f2328}
        table.stages{border-collapse:collapse;font-size:12px}table.stages caption{text-align:left;color:var(--mute)}
        table.stages td,table.stages th{padding:1px 8px;text-align:right;border-bottom:1px solid var(--line)}
        table.stages td:first-child,table.stages th:first-child{text-align:left}
        #filters{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:8px 20px;
        display:flex;gap:14px;flex-wrap:wrap;align-items:center}
        #filters select,#filters input[type=search]{font:inherit}
        .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px;padding:0 20px 20px}
        .card{background:#fff;border:1px solid var(--line);border-radius:6px;overflow:hidden;
        content-visibility:auto;contain-intrinsic-size:auto 320px}
        .card.failed{border-color:var(--fail);box-shadow:inset 0 3px 0 var(--fail)}
        figure{margin:0;position:relative;height:180px;background:#24292f;display:flex;align-items:center;
        justify-content:center}
        figure img{width:100%;height:100%;object-fit:contain}
        figure.wave{background:#0d1117}figure.wave svg{width:100%;height:120px}
        figure.wave path{stroke:#3fb950;stroke-width:1.4}
        figure.none{background:repeating-linear-gradient(45deg,#eaeef2 0 10px,#f6f8fa 10px 20px);color:var(--mute);
        padding:12px;text-align:center;font-size:12px}
        .dur{position:absolute;right:6px;bottom:6px;background:rgba(0,0,0,.75);color:#fff;border-radius:3px;
        padding:0 5px;font:12px/18px ui-monospace,monospace}
        .body{padding:8px 10px}.body h3{font-size:13px;margin:0 0 4px;word-break:break-all}
        .line{margin:0;font-size:12px;color:var(--mute)}
        .badge{color:#fff;border-radius:3px;padding:0 5px;font-size:11px;text-transform:uppercase}
        .badge.passed{background:var(--ok)}.badge.failed{background:var(--fail)}.badge.skipped{background:var(--skip)}
        .rules{margin:6px 0 0;padding-left:18px;font-size:12px;color:var(--fail)}
        .rules code{font-weight:600}.rules .ev{display:block;color:#1f2328}
        details{margin-top:6px;font-size:12px}pre{white-space:pre-wrap;word-break:break-all;max-height:300px;
        overflow:auto;background:#f6f8fa;padding:6px;margin:4px 0 0}
        [hidden]{display:none!important}
        """

    /// Filters, and the waiting chunks of cards: a section's next chunk is made into cards when its last card comes
    /// within 2000 px of the view; any filter makes every chunk first, so it sees every file.
    static let script = """
        (function(){
        var f=document.getElementById('filters'),cards=document.getElementsByClassName('card');
        var total=+document.getElementById('shown').textContent;
        function more(grid){var s=grid.querySelector('script.more');if(!s)return;
        s.insertAdjacentHTML('beforebegin',s.textContent);s.remove();watch(grid)}
        var io='IntersectionObserver' in window&&new IntersectionObserver(function(es){es.forEach(function(e){
        if(e.isIntersecting){io.unobserve(e.target);more(e.target.parentNode)}})},{rootMargin:'2000px'});
        function watch(grid){var c=grid.getElementsByClassName('card');if(!grid.querySelector('script.more'))return;
        if(io&&c.length)io.observe(c[c.length-1]);else more(grid)}
        var grids=document.querySelectorAll('.grid');for(var g=0;g<grids.length;g++)watch(grids[g]);
        function has(list,v){return (' '+list+' ').indexOf(' '+v+' ')>=0}
        function apply(){
        var on={},all=true,boxes=f.querySelectorAll('input[name=status]');
        for(var i=0;i<boxes.length;i++){on[boxes[i].value]=boxes[i].checked;all=all&&boxes[i].checked}
        var rule=f.elements.rule.value,stage=f.elements.stage.value,q=f.elements.q.value.trim().toLowerCase(),n=0;
        if(!all||rule||stage||q)for(var g=0;g<grids.length;g++)while(grids[g].querySelector('script.more'))more(grids[g]);
        for(var j=0;j<cards.length;j++){var c=cards[j],d=c.dataset;
        var ok=on[d.status]&&(!rule||has(d.rules,rule))&&(!stage||has(d.stages,stage))&&(!q||d.name.indexOf(q)>=0);
        c.hidden=!ok;if(ok)n++}
        document.getElementById('shown').textContent=(all&&!rule&&!stage&&!q)?total:n;
        var s=document.querySelectorAll('section.files');
        for(var k=0;k<s.length;k++)s[k].hidden=!s[k].querySelector('.card:not([hidden])')}
        f.addEventListener('input',apply);f.addEventListener('change',apply);
        function fromHash(){var h=new URLSearchParams(location.hash.slice(1));if(!location.hash)return;
        var st=h.get('status'),boxes=f.querySelectorAll('input[name=status]');
        for(var i=0;i<boxes.length;i++)boxes[i].checked=!st||st.split(',').indexOf(boxes[i].value)>=0;
        ['rule','stage','q'].forEach(function(k){if(h.has(k))f.elements[k].value=h.get(k)});apply()}
        addEventListener('hashchange',fromHash);fromHash();
        document.addEventListener('toggle',function(e){var t=e.target.querySelector&&e.target.querySelector('template');
        if(t){e.target.appendChild(t.content.cloneNode(true));t.remove()}},true);
        var r=document.documentElement;r.dataset.scripted=Math.round(performance.now());
        addEventListener('load',function(){r.dataset.loaded=Math.round(performance.now())});
        })();
        """

    /// The filter bar: outcome check boxes, the broken rules, the stages, and a name search. A link can set them:
    /// `report.html#status=failed&rule=validate.duration&stage=probe&q=clip`.
    static func filters(rules: [String: Int], stages: [String], total: Int) -> String {
        var html = "<form id=\"filters\" onsubmit=\"return false\"><span><b id=\"shown\">\(total)</b> shown</span>"
        for status in ["failed", "passed", "skipped"] {
            html += "<label><input type=\"checkbox\" name=\"status\" value=\"\(status)\" checked> \(status)</label>"
        }
        html += "<label>rule <select name=\"rule\"><option value=\"\">any</option>"
        for rule in rules.keys.sorted() {
            html += "<option value=\"\(htmlEscape(rule))\">\(htmlEscape(rule)) (\(rules[rule] ?? 0))</option>"
        }
        html += "</select></label><label>stage <select name=\"stage\"><option value=\"\">any</option>"
        for stage in stages { html += "<option value=\"\(htmlEscape(stage))\">\(htmlEscape(stage))</option>" }
        html += "</select></label><input type=\"search\" name=\"q\" placeholder=\"file name\"></form>\n"
        return html
    }
}
