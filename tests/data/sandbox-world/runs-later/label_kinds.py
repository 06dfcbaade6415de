# Hand labels, by the README's rule, per kind of file (decided by reading every distinct name in the sample).
import re,sys
JSCFG_EXT=r"\.(js|cjs|mjs|ts|cts|mts|json|json5|yml|yaml)$"
RUNS_NAMES={
 # task runners / builds
 'makefile','gnumakefile','justfile','.justfile','taskfile.yml','taskfile.yaml','rakefile','gemfile','cmakelists.txt','meson.build',
 'build.bazel','workspace.bazel','workspace','module.bazel','build.gradle','build.gradle.kts','settings.gradle','settings.gradle.kts',
 'gradle-wrapper.properties','gradle.properties','gradlew','gradlew.bat','mvnw','mvnw.cmd','pom.xml','directory.build.props','directory.build.targets',
 'directory.packages.props','global.json','nuget.config','build.rs','cargo.toml','vagrantfile','earthfile','package.swift',
 # manifests and locks
 'package.json','package-lock.json','yarn.lock','pnpm-lock.yaml','pnpm-workspace.yaml','bun.lock','bun.lockb','cargo.lock','poetry.lock','uv.lock',
 'gemfile.lock','composer.lock','composer.json','go.mod','go.work','pyproject.toml','setup.py','setup.cfg','pipfile','pipfile.lock','flake.nix','flake.lock',
 'shell.nix','default.nix','deno.json','deno.jsonc','deno.lock','pubspec.yaml','pubspec.lock','libs.versions.toml','.gitmodules',
 '.npmrc','.yarnrc','.yarnrc.yml','bunfig.toml','pip.conf','.pnpmfile.cjs',
 # code-form / plugin-loading tool config
 'conftest.py','noxfile.py','tox.ini','pytest.ini','mypy.ini','.pylintrc','pylintrc','.flake8','.rubocop.yml','.rubocop_todo.yml','.rspec','.simplecov',
 '.pryrc','.irbrc','phpunit.xml','phpunit.xml.dist','.php-cs-fixer.php','.php-cs-fixer.dist.php','phpstan.neon','phpstan.neon.dist','config.ru',
 'gruntfile.js','gulpfile.js','karma.conf.js','karma.conf.cjs','.babelrc','.mocharc','.c8rc','.nycrc','.lintstagedrc','.prettierrc','.eslintrc','.releaserc',
 '.releaserc.json','.coveragerc','.golangci.yml','.goreleaser.yml','.goreleaser.yaml','cross.toml','.nvim.lua','.exrc','.dir-locals.el','.vimrc',
 '.jrubyrc','.yardopts',
 # CI
 '.gitlab-ci.yml','.travis.yml','appveyor.yml','.appveyor.yml','azure-pipelines.yml','jenkinsfile','.cirrus.yml','.drone.yml','bitbucket-pipelines.yml',
 'netlify.toml','wrangler.toml','.readthedocs.yml','.readthedocs.yaml','vercel.json','codemagic.yaml',
 # env / containers / workspaces
 '.envrc','mise.toml','.mise.toml','dockerfile','docker-compose.yml','docker-compose.yaml','compose.yml','compose.yaml','.gitpod.yml',
 '.pre-commit-config.yaml','lefthook.yml','lefthook.yaml','.lefthook.yml','rust-toolchain','rust-toolchain.toml','.cargo/config.toml','.cargo/config',
 # agents
 '.mcp.json','opencode.json','.gemini-research.json',
}
def label(p):
    parts=p.lower().split('/')
    for i,x in enumerate(parts[:-1]):
        if x in ('.claude','.cursor','.vscode','.zed','.kiro','.gemini','.codex','.devcontainer','.husky','.idea','.mvn','.cargo','.circleci'):
            parts=parts[i:]; break
    name=parts[-1]; dirs=parts[:-1]; top=parts[0]
    # agent folders: only settings/hook/MCP configuration runs
    if top in ('.claude',):
        if re.fullmatch(r'settings(\.local)?\.json',name) or (len(dirs)>=2 and dirs[1]=='hooks') or name=='mcp.json': return 'runs'
        return 'not'
    if top in ('.cursor','.vscode','.zed','.kiro','.gemini','.codex','.antigravitycli'):
        if name in ('mcp.json','tasks.json','launch.json','settings.json','config.toml','mcp_config.json') and len(parts)==2: return 'runs'
        if top=='.kiro' and len(dirs)>=2 and dirs[1] in ('hooks','settings'): return 'runs'
        if top=='.gemini' and len(dirs)>=2 and dirs[1]=='extensions' and (name.endswith(('.js','.cjs','.mjs')) or name=='gemini-extension.json' or len(parts)==3): return 'runs'
        return 'not'
    if top=='.ai' or top=='.agents' or top=='.opencode' or top=='.jcode' or top=='.junie' or top=='.atl':
        return 'runs' if name=='package.json' else 'not'
    if top=='.github':
        if len(dirs)>=2 and dirs[1]=='workflows' and re.search(r'\.ya?ml$',name): return 'runs'
        if len(dirs)>=2 and dirs[1]=='actions': return 'runs' if (name in('action.yml','action.yaml') or not name.endswith(('.md','.txt','.patterns'))) else 'not'
        if len(dirs)>=2 and dirs[1]=='scripts': return 'not'   # run only when a workflow names them
        if name in ('codeql-config.yml',): return 'not'
        if len(dirs)>=2 and dirs[1]=='external_ci': return 'runs'
        if len(dirs)>=2 and dirs[1]=='buildomat': return 'not' if name.endswith('.md') else 'runs'
        return 'not'
    if top in ('.husky','.githooks','.vite-hooks') and len(parts)>=2 and not name.endswith('.md'): return 'runs'
    if top=='.devcontainer': return 'runs'
    if top=='.circleci' or top=='.buildkite': return 'runs'
    if top=='.mvn': return 'runs'
    if top=='.idea':
        return 'runs' if ('runconfigurations' in dirs or name in('workspace.xml','misc.xml')) else 'not'
    if top=='.junit.run': return 'runs'   # IntelliJ run configurations folder
    if top=='.cargo': return 'runs' if name in('config','config.toml') else 'not'
    if top=='.codesandbox': return 'runs'   # ci.json: install and build commands
    if name in RUNS_NAMES: return 'runs'
    if '/'.join(parts[-2:]) in RUNS_NAMES: return 'runs'
    if re.fullmatch(r'gemfile[-.].*',name) and not name.endswith('.lock') and not name.endswith('.md'): return 'runs'   # gemfiles/Gemfile-rails-7-0 via BUNDLE_GEMFILE in CI
    if name.endswith('.gemspec'): return 'runs'
    if name.endswith(('.csproj','.fsproj','.vbproj','.props','.targets')) : return 'runs'
    if name.endswith('.cmake') or name=='cmakelists.txt': return 'runs'
    if name.endswith(('.gradle','.gradle.kts')): return 'runs'
    if name.endswith('.bzl'): return 'runs'
    if name.endswith('.rake'): return 'runs'   # loaded by a Rakefile's glob
    if re.fullmatch(r'tsconfig([.\w-]*)\.json',name): return 'runs'
    if re.fullmatch(r'[\w.-]*\.config\.[cm]?[jt]s|[\w.-]+\.config\.(json|json5)',name) and not name.startswith(('sentry.','ecosystem.')): return 'runs'
    if name.startswith(('sentry.','ecosystem.')) and '.config.' in name: return 'not'  # app code imported by the program / pm2 named
    if re.fullmatch(r'\.(eslintrc|prettierrc|babelrc|mocharc|lintstagedrc|nycrc|swcrc|stylelintrc|postcssrc|releaserc|c8rc)(\.[\w]+)?',name): return 'runs'
    if re.fullmatch(r'(babel|eslint|prettier|jest|vite|vitest|webpack|rollup|postcss|tailwind|svelte|next|nuxt|astro|playwright|cypress|tsup|tsdown|knip|yarn|puppeteer)\.config\.[\w.]+',name): return 'runs'
    if name in ('custom.eslint.config.mjs',): return 'runs'
    return 'not'
if __name__=='__main__':
    import hashlib
    out=open('labelled.tsv','w')
    for l in open('sample.tsv'):
        repo,c,p,s=l.rstrip('\n').split('\t')
        half='tune' if hashlib.sha256(repo.encode()).hexdigest()[0] in '01234567' else 'test'
        out.write('\t'.join([repo,c,p,s,label(p),half])+'\n')
