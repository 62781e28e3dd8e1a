import type { Reply } from '../../core/reply.ts';
import type { ChatImage, ImageSource } from '../images/images.ts';
import { DISCORD_LIMITS, type DiscordMessage, renderDiscord } from './render.ts';

/** A file uploaded with a message. */
export interface DiscordFile {
  name: string;
  data: Uint8Array;
}

/** Most files one Discord message carries. */
export const FILES_PER_MESSAGE = 10;

type Slot = 'image' | 'thumbnail';

/**
 * Replies rendered as one Discord message, their images made showable first: an image Discord can
 * fetch stays a link in the embed; an SVG drawn as a PNG is uploaded with the message and its
 * embed refers to it as `attachment://name` (large images first, then thumbnails, within the
 * message's file limit); an image that cannot be shown is left out. The Replies' own attachments
 * follow the images in `files`.
 */
export async function renderWithImages(
  replies: readonly Reply[],
  images: ImageSource,
): Promise<{ message: DiscordMessage; files: DiscordFile[] }> {
  const shown = replies.slice(0, DISCORD_LIMITS.embedsPerMessage);
  const found = await Promise.all(
    shown.map(async (reply) => ({
      image: await images.show(reply.image),
      thumbnail: await images.show(reply.thumbnail),
    })),
  );
  const message = renderDiscord(
    shown.map((reply, i) => {
      const { image: _image, thumbnail: _thumbnail, ...rest } = reply;
      const byUrl = (slot: Slot) => {
        const image = found[i]?.[slot];
        return image?.kind === 'url' ? { [slot]: image.url } : {};
      };
      return { ...rest, ...byUrl('image'), ...byUrl('thumbnail') };
    }),
  );
  const uploads = new Map<string, Uint8Array>();
  for (const slot of ['image', 'thumbnail'] as const) {
    message.embeds.forEach((embed, i) => {
      const image: ChatImage | undefined = found[i]?.[slot];
      if (image?.kind !== 'png') return;
      if (!uploads.has(image.name)) {
        if (uploads.size >= FILES_PER_MESSAGE) return;
        uploads.set(image.name, image.data);
      }
      embed[slot] = { url: `attachment://${image.name}` };
    });
  }
  const files = [...uploads].map(([name, data]) => ({ name, data }));
  for (const attachment of replies.flatMap((r) => r.attachments ?? [])) {
    if (files.length >= FILES_PER_MESSAGE) break;
    files.push({ name: attachment.name, data: attachment.data });
  }
  return { message, files };
}
