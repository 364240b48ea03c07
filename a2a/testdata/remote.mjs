// A remote A2A agent built with the reference JavaScript SDK's server classes (express). Env: SDK
// (the SDK's dist folder), EXPRESS (express's index.js), KEY (the X-Remote-Key every request
// must carry). It prints "listening PORT". Its first message in a task asks for a date
// (input-required); the answer completes the task with a text artifact.
import { pathToFileURL } from 'node:url';

const imp = (p) => import(pathToFileURL(p).href);
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = await imp(process.env.SDK + '/server/index.js');
const { jsonRpcHandler, agentCardHandler, UserBuilder } = await imp(process.env.SDK + '/server/express/index.js');
const { Role, TaskState } = await imp(process.env.SDK + '/index.js');
const express = (await imp(process.env.EXPRESS)).default;

const textPart = (value) => ({ content: { $case: 'text', value }, filename: '', mediaType: '', metadata: undefined });
const agentMsg = (ctx, text) => ({ messageId: 'm-' + Math.random().toString(36).slice(2), contextId: ctx.contextId, taskId: ctx.taskId,
  role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] });

const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const task = ctx.task || { id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined } };
    bus.publish(AgentEvent.task(task));
    bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined } }));
    if (!ctx.task) {
      bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
        status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: agentMsg(ctx, 'Which date?'), timestamp: undefined } }));
    } else {
      bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: 'a1', name: 'booking', description: '', parts: [textPart('booking for ' + text)], metadata: undefined, extensions: [] } }));
      bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: agentMsg(ctx, 'Booked.'), timestamp: undefined } }));
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) { bus.finished(); },
};

const app = express();
app.use((req, res, next) => (req.get('X-Remote-Key') === process.env.KEY ? next() : res.status(401).json({ error: 'no key' })));
const server = app.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const card = { name: 'booker', description: 'Books tables.', version: '1',
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], securitySchemes: {}, securityRequirements: [],
    signatures: [], provider: undefined, documentationUrl: undefined, iconUrl: undefined };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log('listening ' + port);
});
