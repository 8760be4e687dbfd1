/**
 * The writer of a fair-queue outbox: each report request commits with its `ReportRequested` event,
 * whose entity is the tenant. With `Outbox({ fairQueue: true })` the relay sends the tenant as the
 * `MessageGroupId`, so SQS keeps the receiving queue fair between tenants (see
 * `examples/outbox-fair-queue-stack.ts`).
 */
import { atomic, createSqsHandler, fromBody } from 'effectively-once';

const requestsTable = process.env.REQUESTS_TABLE!;

export const handler = createSqsHandler<{ reportId: string; tenantId: string }>({
  dedupKey: fromBody('reportId'),
  mode: atomic((message, unitOfWork) => {
    const { reportId, tenantId } = message.body;
    unitOfWork.put({ TableName: requestsTable, Item: { pk: reportId, tenantId, status: 'REQUESTED' } });
    // The tenant is the group SQS keeps fair; a tenant id SQS would refuse as a group id is
    // refused here, before the commit, and the request dead-lettered with the reason.
    unitOfWork.emit({ type: 'ReportRequested', detail: { reportId, tenantId } }, { entity: tenantId });
  }),
});
