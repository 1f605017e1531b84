// tojson.mjs - print openapi/verdict.yaml as JSON (2-space indent), the form /openapi.json serves.
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
const doc = yaml.load(readFileSync(process.argv[2], 'utf8'));
process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
