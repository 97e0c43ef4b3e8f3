// Starts the Firebase Auth emulator of firebase-tools (pinned in
// package-lock.json) without the firebase CLI around it:
//
//   node auth-emulator.cjs HOST PORT PROJECT
//
// The CLI would fetch a message of the day, look for updates and start an
// emulator hub; this serves only the Auth emulator's own HTTP app, the one
// `firebase emulators:start --only auth` serves. It prints "ready HOST:PORT"
// once it accepts connections. PROJECT is the project of the ID tokens it
// issues to clients signing in with an API key.
'use strict';

const path = require('node:path');

const [host, port, project] = process.argv.slice(2);
if (!host || !port || !project) {
  console.error('usage: node auth-emulator.cjs HOST PORT PROJECT');
  process.exit(2);
}
const root = path.dirname(require.resolve('firebase-tools/package.json'));
// The emulator hands the Identity Toolkit's OpenAPI description to
// exegesis, which by default compiles the validator of every operation
// before it serves: most of the start, about 6 s of CPU (39 s on the
// loaded 2-core development machine). exegesis's own
// lazyCompileValidationSchemas option compiles each one when its operation
// is first called instead; requests are validated as before.
const exegesisExpress = require(require.resolve('exegesis-express', { paths: [root] }));
const middleware = exegesisExpress.middleware;
exegesisExpress.middleware = (spec, options) => middleware(spec, { ...options, lazyCompileValidationSchemas: true });
const { createApp } = require(path.join(root, 'lib', 'emulator', 'auth', 'server.js'));

createApp(project).then((app) => {
  const server = app.listen(Number(port), host, () => {
    const addr = server.address();
    console.log(`ready ${addr.address}:${addr.port}`);
  });
  server.on('error', (err) => {
    console.error(err.message);
    process.exit(1);
  });
}, (err) => {
  console.error(err);
  process.exit(1);
});
