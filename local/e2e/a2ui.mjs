// Reads what Baton's Go code produced with @a2ui/web_core's own v0.9
// parsing, as the web renderer would: a2ui/webcore_test.go pipes cases in
// as JSON and reads the verdicts back.
//
// Input (stdin): {"cases": [{"name", "messages"?: [...], "parts"?: [...],
//   "press"?: {"surfaceId", "componentId", "set": {"<path>": value}}}]}
// Output (stdout): {"results": [{"name", "ok", "error"?, "surfaces": {
//   "<id>": {"components": {"<id>": {component, ...properties}}, "data"}},
//   "action"?: {"version", "action"}}]}
//
// A case's messages are parsed with the message list schema (zod), then
// processed by a MessageProcessor holding the basic catalog's component
// schemas, which checks every component's properties and the order of the
// messages. A case's parts are data-a2ui parts as Baton's stream or
// history carries them ({type, id, data: {surfaceId, messages, callId?}}):
// each is checked and drawn on a processor of its own, as the demo page
// draws a part, and the latest part of a surface is the surface. A press
// sets data model paths (the user typing), then dispatches the component's
// action the way a rendered button does.
import {
  A2uiMessageListSchema,
  BASIC_COMPONENTS,
  BASIC_FUNCTIONS,
  Catalog,
  ComponentContext,
  MessageProcessor,
} from '@a2ui/web_core/v0_9';

const BASIC_CATALOG_ID = 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json';

// copy snapshots a value: a later press must not change what was read.
const copy = v => (v === undefined ? null : JSON.parse(JSON.stringify(v)));

function surfacesOf(processor, out = {}) {
  for (const [id, surface] of processor.model.surfacesMap) {
    const components = {};
    for (const [cid, model] of surface.componentsModel.entries) {
      components[cid] = copy({ component: model.type, ...model.properties });
    }
    out[id] = { components, data: copy(surface.dataModel.get('/')) };
  }
  return out;
}

async function press(processor, { surfaceId, componentId, set }) {
  const surface = processor.model.getSurface(surfaceId);
  if (!surface) throw new Error(`press: no surface ${surfaceId}`);
  for (const [path, value] of Object.entries(set ?? {})) {
    surface.dataModel.set(path, value);
  }
  let sent;
  const sub = surface.onAction.subscribe(action => {
    sent = action;
  });
  const context = new ComponentContext(surface, componentId);
  const action = context.componentModel.properties.action;
  await context.dispatchAction(context.dataContext.resolveAction(action));
  sub.unsubscribe?.();
  if (!sent) throw new Error(`press: ${componentId} sent no action`);
  return { version: 'v0.9', action: sent };
}

function processorOf(messages) {
  const processor = new MessageProcessor([new Catalog(BASIC_CATALOG_ID, BASIC_COMPONENTS, BASIC_FUNCTIONS)]);
  A2uiMessageListSchema.parse(messages);
  processor.processMessages(messages);
  return processor;
}

/** The processors of the latest part of each surface, by surface id. */
function drawParts(parts) {
  const latest = new Map();
  for (const [i, p] of parts.entries()) {
    if (p.type !== 'data-a2ui') throw new Error(`parts[${i}]: type ${p.type}, want data-a2ui`);
    if (!p.id || p.id !== p.data?.surfaceId) throw new Error(`parts[${i}]: id ${p.id} is not its surfaceId ${p.data?.surfaceId}`);
    if (p.data.callId !== undefined && typeof p.data.callId !== 'string') throw new Error(`parts[${i}]: callId is not a string`);
    if (p.data.messages.some((m) => (m.createSurface ?? m.updateComponents ?? m.updateDataModel ?? m.deleteSurface)?.surfaceId !== p.id)) {
      throw new Error(`parts[${i}]: a message names another surface than ${p.id}`);
    }
    latest.set(p.id, processorOf(p.data.messages));
  }
  return latest;
}

async function run(c) {
  try {
    let result;
    let pressOn;
    if (c.parts) {
      const latest = drawParts(c.parts);
      const surfaces = {};
      for (const processor of latest.values()) surfacesOf(processor, surfaces);
      result = { name: c.name, ok: true, surfaces };
      pressOn = latest.get(c.press?.surfaceId);
    } else {
      pressOn = processorOf(c.messages);
      result = { name: c.name, ok: true, surfaces: surfacesOf(pressOn) };
    }
    if (c.press) result.action = await press(pressOn, c.press);
    return result;
  } catch (err) {
    return { name: c.name, ok: false, error: String(err?.message ?? err).slice(0, 500) };
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { cases } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const results = [];
for (const c of cases) results.push(await run(c));
process.stdout.write(JSON.stringify({ results }));
