// Files: the composer's attach button, and a file part of a message. The
// files go with the message as useChat sends them (data URLs); Baton
// stores them and, once the conversation is loaded again, gives each a
// short-lived URL an <img> can show (docs/files-and-long-chats.md).

import { useRef } from 'react';

/** The attach button and the names of the files picked for the next message. */
export function Attach({ files, onChange, disabled }) {
  const input = useRef(null);
  const names = files ? Array.from(files, (f) => f.name).join(', ') : '';
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
