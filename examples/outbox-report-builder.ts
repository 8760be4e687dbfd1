/**
 * The receiver on the fair queue: one report per `ReportRequested` event, keyed on the event id
 * the relay sends as `idempotency-key`, so a copy published again builds nothing twice. Its
 * records carry the tenant in `attributes.MessageGroupId` (`message.groupId`).
 */
import { atomic, createSqsHandler, fromAttribute } from 'effectively-once';

const reportsTable = process.env.REPORTS_TABLE!;

export const handler = createSqsHandler<{ reportId: string; tenantId: string }>({
  dedupKey: fromAttribute('idempotency-key'),
  mode: atomic((message, unitOfWork) => {
    const { reportId, tenantId } = message.body;
    unitOfWork.put({ TableName: reportsTable, Item: { pk: reportId, tenantId, status: 'QUEUED' } });
  }),
});
