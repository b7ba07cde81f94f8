'use strict';
/*
 * scripts/build.js - the `npm install` hook of larder's Node.js binding.
 *
 * Inside the larder repository: configures the repository with CMake
 * (Release, no tests) in build/cmake and builds only the addon, then copies
 * it to build/larder.node, where index.js looks. Offline: the Node-API
 * headers come from the node-api-headers devDependency when npm installed
 * it, otherwise from the headers Node installs beside itself.
 * In a package made by `npm pack` (no engine sources beside it): uses the
 * build/larder.node the package carries.
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');
const root = path.resolve(pkg, '..', '..');
const out = path.join(pkg, 'build', 'larder.node');

function run(cmd, args) {
  console.log(`larder: ${cmd} ${args.join(' ')}`);
  try {
    execFileSync(cmd, args, { stdio: 'inherit' });
  } catch (err) {
    if (err.code === 'ENOENT') {
      throw new Error(`larder: ${cmd} is needed to build the addon ` +
        '(Debian: apt-get install cmake ninja-build gcc pkg-config libxxhash-dev liblz4-dev)');
    }
    throw err;
  }
}

function hasNinja() {
  try {
    execFileSync('ninja', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function main() {
  const inRepo = fs.existsSync(path.join(root, 'include', 'larder.h')) &&
    fs.existsSync(path.join(root, 'bindings', 'node', 'src', 'addon.c'));
  if (!inRepo) {
    if (fs.existsSync(out)) {
      console.log(`larder: using the addon this package carries (${out})`);
      return;
    }
    throw new Error('larder: no engine sources and no prebuilt build/larder.node; ' +
      'install from the larder repository (bindings/node)');
  }
  const dir = path.join(pkg, 'build', 'cmake');
  const args = ['-S', root, '-B', dir, '-DCMAKE_BUILD_TYPE=Release', '-DBUILD_TESTING=OFF'];
  if (hasNinja()) args.push('-G', 'Ninja');
  const headers = path.join(pkg, 'node_modules', 'node-api-headers', 'include');
  if (fs.existsSync(path.join(headers, 'js_native_api.h'))) args.push(`-DLARDER_NODE_API_INCLUDE=${headers}`);
  run('cmake', args);
  run('cmake', ['--build', dir, '--target', 'larder_node', '--parallel', process.env.LARDER_JOBS || '2']);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.copyFileSync(path.join(dir, 'bindings', 'node', 'larder.node'), out);
  console.log(`larder: built ${out}`);
}

main();
