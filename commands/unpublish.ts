import { createHash } from 'node:crypto';
import { defineCommand } from '../src/bot/command.ts';
import { bold, code, oneLine, truncate } from '../src/core/reply.ts';

/**
 * The confirmation code is derived from the collection and the operator, so the button survives a
 * restart and cannot be reused by someone else or for another collection.
 */
function confirmationCode(collectionId: number, actorId: string): string {
  return createHash('sha256').update(`unpublish:${collectionId}:${actorId}`).digest('hex').slice(0, 8);
}

/** The `confirm` word of the Cancel button: never a confirmation code (those are hexadecimal). */
const CANCEL = 'cancel';

export default defineCommand({
  name: 'unpublish',
  description: 'Unpublish a collection of the project (operators, asks for confirmation)',
  permission: 'operator',
  example: '/unpublish 12',
  options: [
    { name: 'collection', type: 'integer', description: 'Collection id in the project', required: true, min: 1 },
    { name: 'confirm', type: 'text', description: 'The confirmation code the first answer shows, or "cancel"' },
  ],
  async run(ctx, { collection, confirm }) {
    // The Cancel button answers the question in place: the confirmation gives way to the outcome.
    if (confirm?.toLowerCase() === CANCEL) {
      return { tone: 'info', ephemeral: true, lines: [`Cancelled: collection ${collection} stays published.`] };
    }
    const expected = confirmationCode(collection, `${ctx.chat.platform}:${ctx.actor.id}`);
    if (confirm !== expected) {
      const project = ctx.settings.projectId === undefined ? '' : ` of project ${ctx.settings.projectId}`;
      return {
        title: `Unpublish collection ${collection}${project}?`,
        tone: 'warning',
        ephemeral: true,
        lines: [
          confirm === undefined
            ? 'This takes the collection off the platform for everyone.'
            : `"${truncate(confirm, 40)}" is not your confirmation code for collection ${collection}.`,
          // The code is the person's own (another operator's press or typing fails), so it may be shown.
          [bold('Confirm'), ' to go ahead, or type ', code(`/unpublish ${collection} confirm=${expected}`), '.'],
        ],
        buttons: [
          [
            {
              label: 'Confirm unpublish',
              style: 'danger',
              action: `/unpublish collection=${collection} confirm=${expected}`,
            },
            {
              label: 'Cancel',
              style: 'secondary',
              action: `/unpublish collection=${collection} confirm=${CANCEL}`,
              replaces: true,
            },
          ],
        ],
      };
    }
    const result = await ctx.platform.collections.unpublishCollection({
      collectionId: collection,
      ...(ctx.settings.projectId === undefined ? {} : { projectId: ctx.settings.projectId }),
    });
    ctx.logger.warn({ collectionId: collection, by: `${ctx.chat.platform}:${ctx.actor.id}` }, 'collection unpublished');
    return {
      title: 'Collection unpublished',
      tone: 'success',
      lines: [
        `${oneLine(result.metadata.name, 100) || `Collection ${collection}`} (id ${result.id}) is no longer published.`,
      ],
    };
  },
});
