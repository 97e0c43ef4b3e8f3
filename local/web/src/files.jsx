// Files: the composer's attach button, a file part of a message, and what
// the page says about a message too large to send. The files go with the
// message as useChat sends them (data URLs); Baton stores them and, once
// the conversation is loaded again, gives each a short-lived URL an <img>
// can show (docs/files-and-long-chats.md).

import { useRef } from 'react';

/**
 * The attach button and the names of the files picked for the next
 * message: a FileList, or the file parts of a message given back to the
 * message box (useChat's sendMessage takes both).
 */
export function Attach({ files, onChange, disabled }) {
  const input = useRef(null);
  const names = files ? Array.from(files, (f) => f.name ?? f.filename ?? f.mediaType).join(', ') : '';
  return (
    <>
      <input ref={input} type="file" hidden data-testid="attach-input" multiple
        onChange={(e) => onChange(e.target.files?.length ? e.target.files : null)} />
      <button type="button" className="attach" data-testid="attach" disabled={disabled}
        title={names ? `Attached: ${names}` : 'Attach a file'} aria-label="Attach a file"
        onClick={() => input.current?.click()}>
        Attach{files ? ` (${files.length})` : ''}
      </button>
      {names && (
        <span className="attached" data-testid="attached">{names}{' '}
          <button type="button" className="link" onClick={() => { onChange(null); input.current.value = ''; }}>remove</button>
        </span>
      )}
    </>
  );
}

/** A file part: an image shows as one, any other file as a link. */
export function FilePart({ part }) {
  const name = part.filename || part.mediaType;
  if (part.mediaType?.startsWith('image/')) {
    return <img className="file" data-testid="message-file" src={part.url} alt={name} />;
  }
  return <a className="file" data-testid="message-file" href={part.url} download={part.filename}>{name}</a>;
}

// --- sizes -------------------------------------------------------------------

/** A size as a person reads it: "10.8 MB", "256 KB", "900 bytes". */
export function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  const [n, unit] = bytes < 1024 * 1024 ? [bytes / 1024, 'KB'] : [bytes / (1024 * 1024), 'MB'];
  return `${Number(n.toFixed(1))} ${unit}`;
}

/** "size; the limit is limit", exact in bytes where rounding would make them read alike. */
function overText(size, limit) {
  const [a, b] = [sizeText(size), sizeText(limit)];
  return a === b ? `${size.toLocaleString('en')} bytes; the limit is ${limit.toLocaleString('en')} bytes` : `${a}; the limit is ${b}`;
}

/** What a file is called in a sentence: "The photo “cat.jpg”", "The file “notes.pdf”". */
function fileNoun(name, mediaType) {
  const kind = mediaType?.startsWith('image/') ? 'photo' : mediaType?.startsWith('video/') ? 'video' : 'file';
  return name ? `The ${kind} “${name}”` : `The ${kind}`;
}

/** A file to send as the page sees it: a File, or a file part with its data URL. */
function fileFacts(f) {
  if (typeof f.size === 'number') return { name: f.name, mediaType: f.type, bytes: f.size };
  const data = String(f.url ?? '').split(',')[1] ?? '';
  const bytes = Math.floor(data.length * 3 / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
  return { name: f.filename, mediaType: f.mediaType, bytes, url: !String(f.url ?? '').startsWith('data:') };
}

/** The bytes of text in UTF-8, as the server counts them. */
const utf8Bytes = (text) => new TextEncoder().encode(text).length;

/**
 * Why a message (text, files: a FileList or file parts) cannot go, in
 * words a person reads, or '' when it can as far as the page can tell.
 * limits are /config.json's: fileBytes for each file (BATON_MAX_FILE_BYTES),
 * messageBytes for the message without its files (BATON_MAX_BODY_BYTES),
 * bodyBytes for the whole request (BATON_MAX_CHAT_BODY_BYTES).
 */
export function sizeProblem(text, files, limits) {
  if (!limits) return '';
  const list = files ? Array.from(files, fileFacts) : [];
  for (const f of list) {
    if (!f.url && limits.fileBytes && f.bytes > limits.fileBytes) {
      return `${fileNoun(list.length > 1 ? f.name : '', f.mediaType)} is ${overText(f.bytes, limits.fileBytes)}. Pick a smaller one.`;
    }
  }
  // The message as JSON, without its files (a few dozen bytes of id and
  // field names beside the text).
  const rest = utf8Bytes(JSON.stringify({ id: 'x'.repeat(16), role: 'user', parts: [{ type: 'text', text }] }));
  if (limits.messageBytes && rest > limits.messageBytes) {
    return `Your message is ${overText(utf8Bytes(text), limits.messageBytes)}. Shorten it, or send it as a file.`;
  }
  const body = rest + list.reduce((sum, f) => sum + (f.url ? 0 : Math.ceil(f.bytes / 3) * 4), 0);
  if (limits.bodyBytes && body > limits.bodyBytes) {
    return `Your message with its files is ${overText(body, limits.bodyBytes)} once encoded. Send fewer files at once.`;
  }
  return '';
}

/**
 * What a refusal of message m (too large, say) means for the person,
 * naming what was too large; null when the server's error says it well
 * enough. e is the JSON error ({code, message}).
 */
export function refusedText(e, m, limits) {
  const back = 'It was not sent: it is back in the message box.';
  if (e?.code !== 'too_large') return null;
  const over = /over the limit of (\d+) bytes/.exec(e.message ?? '');
  const limit = Number(over?.[1] ?? 0);
  const part = /parts\[(\d+)\]/.exec(e.message ?? '');
  if (part && m?.parts[Number(part[1])]?.type === 'file' && limit) {
    const f = fileFacts(m.parts[Number(part[1])]);
    return `${fileNoun(f.name, f.mediaType)} is ${overText(f.bytes, limit)}. ${back}`;
  }
  const text = m?.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') ?? '';
  if (/without its files/.test(e.message ?? '') && limit) return `Your message is ${overText(utf8Bytes(text), limit)}. ${back}`;
  if (limits && limit) return `Your message is over the limit of ${sizeText(limit)} the server takes. ${back}`;
  return `Your message is too large for the server. ${back}`;
}
