import hashlib, csv, sys, re, collections
PLAIN_EXT = set("rs py js ts tsx jsx mjs cjs mts cts go java kt rb c h cc cpp cxx hpp hh cs php md markdown rst txt html htm css scss less svg png jpg jpeg gif ico webp snap vue svelte pyi pyc swift m mm scala clj ex exs erb haml slim liquid twig blade tpl json5 csv tsv gz zip woff woff2 ttf eot otf pdf mp3 mp4 wav bin dat out expected diff patch log map wasm proto sql graphql gql hbs ejs pug xsd xsl dtd".split())
HINT = re.compile(r"config|conf|setup|build|rc$|rc\.|file$|^\.|hook|task|gradle|mvn|pom|toolchain|version|cargo|package|gem|rake|make|cmake|compose|docker|nix|env|lock", re.I)
def h(s): return hashlib.sha256(s.encode()).hexdigest()
rows=[l.rstrip('\n').split('\t') for l in open('trees.tsv')]
by=collections.defaultdict(list)
for repo,c,p in rows: by[repo].append((c,p))
out=[]
for repo,items in by.items():
    cand=[];rest=[]
    for c,p in items:
        parts=p.split('/'); name=parts[-1]
        ext=name.rsplit('.',1)[1].lower() if '.' in name.lstrip('.') else ''
        dotted=any(x.startswith('.') for x in parts)
        if dotted or (len(parts)<=2 and ext not in PLAIN_EXT) or HINT.search(name):
            cand.append((c,p))
        else: rest.append((c,p))
    groups=collections.defaultdict(list)
    for c,p in cand:
        parts=p.split('/')
        key=(parts[-1].lower(), parts[0] if parts[0].startswith('.') else '')
        groups[key].append((h(f"{repo}:{p}"),c,p))
    sel=[]
    for k,g in groups.items():
        g.sort()
        sel.append(g[0])
    sel.sort()
    t0=[x for x in sel if x[2].count('/')==0 or (x[2].startswith('.') and not x[2].startswith('.yarn/'))]
    t1=[x for x in sel if x not in t0]
    for _,c,p in t0: out.append((repo,c,p,'root-or-dotdir'))
    for _,c,p in t1[:40]: out.append((repo,c,p,'config-looking'))
    rest=sorted((h(f"{repo}:{p}"),c,p) for c,p in rest)
    for _,c,p in rest[:10]: out.append((repo,c,p,'random'))
out.sort()
w=open('sample.tsv','w')
for r in out:
    w.write('\t'.join(r)+'\n')
print(len(out))
