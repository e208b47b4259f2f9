// Reads a model through a hub endpoint with the hub's JavaScript client,
// @huggingface/hub, as an application would: the model's info, every file
// of its tree, and each file's bytes, written under OUT; then asks
// paths-info about every file, the folder "tokenizer" and a path that is
// not there.
//
//   node read_model.mjs ENDPOINT REPO REVISION TOKEN OUT
//
// Prints one JSON object: {"name", "files": {path: {"size", "oid"}},
// "paths": {path: {"type", "size", "oid", "commit"}}}.
// Any failure exits 1 with the client's error on stderr.
import { downloadFile, listFiles, modelInfo, pathsInfo } from "@huggingface/hub";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

const [hubUrl, name, revision, accessToken, out] = process.argv.slice(2);
const repo = { type: "model", name };
try {
  const info = await modelInfo({ name, hubUrl, accessToken, revision });
  const files = {};
  for await (const entry of listFiles({ repo, revision, hubUrl, accessToken, recursive: true })) {
    if (entry.type !== "file") continue;
    const blob = await downloadFile({ repo, path: entry.path, revision, hubUrl, accessToken });
    if (blob === null) throw new Error(`${entry.path}: not found`);
    const bytes = Buffer.from(await blob.arrayBuffer());
    await mkdir(dirname(join(out, entry.path)), { recursive: true });
    await writeFile(join(out, entry.path), bytes);
    files[entry.path] = { size: bytes.length, oid: entry.lfs ? entry.lfs.oid : entry.oid };
  }
  const asked = [...Object.keys(files), "tokenizer", "no/such/file"];
  const paths = {};
  for (const p of await pathsInfo({ repo, paths: asked, revision, hubUrl, accessToken, expand: true })) {
    paths[p.path] = { type: p.type, size: p.size, oid: p.lfs ? p.lfs.oid : p.oid, commit: p.lastCommit.id };
  }
  console.log(JSON.stringify({ name: info.name, files, paths }));
} catch (e) {
  console.error(`read_model: ${e.message}`);
  process.exit(1);
}
