'use strict';
/*
 * The package as npm ships it: `npm pack` of the binding (with the addon
 * under test placed where the package carries it), extracted elsewhere,
 * its install hook run (it must use the addon it carries, not look for the
 * engine's sources), then required and used from a fresh process with no
 * LARDER_NODE_ADDON set.
 */
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const PKG = path.resolve(__dirname, '..');
const ADDON = process.env.LARDER_NODE_ADDON
  ? path.resolve(process.env.LARDER_NODE_ADDON) : path.join(PKG, 'build', 'larder.node');
const NPM = process.env.LARDER_NPM || 'npm';

test('npm pack output installs and loads on its own', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'larder-pack-'));
  try {
    const src = path.join(tmp, 'src');
    fs.mkdirSync(path.join(src, 'scripts'), { recursive: true });
    fs.mkdirSync(path.join(src, 'build'));
    for (const f of ['package.json', 'index.js', 'scripts/build.js']) {
      fs.copyFileSync(path.join(PKG, f), path.join(src, f));
    }
    fs.copyFileSync(ADDON, path.join(src, 'build', 'larder.node'));
    const out = execFileSync(NPM, ['pack', '--ignore-scripts', '--pack-destination', tmp, '--json'],
      { cwd: src, encoding: 'utf8', env: { ...process.env, npm_config_offline: 'true' } });
    const [{ filename, files }] = JSON.parse(out);
    const names = files.map((f) => f.path).sort();
    assert.deepEqual(names, ['build/larder.node', 'index.js', 'package.json', 'scripts/build.js']);

    const dest = path.join(tmp, 'installed');
    fs.mkdirSync(dest);
    execFileSync('tar', ['xzf', path.join(tmp, filename), '-C', dest]);
    const pkg = path.join(dest, 'package');
    const env = { ...process.env };
    delete env.LARDER_NODE_ADDON;
    const hook = execFileSync(process.execPath, ['scripts/build.js'], { cwd: pkg, env, encoding: 'utf8' });
    assert.match(hook, /using the addon this package carries/);
    const script = `
      const { LarderCache } = require(${JSON.stringify(pkg)});
      const c = new LarderCache({ maxSize: 1 << 20 });
      c.set('k', { packed: true });
      process.stdout.write(JSON.stringify(c.get('k')));
      c.close();`;
    const got = execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
    assert.equal(got, '{"packed":true}');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
