// The person's chats (GET /Chat): a sidebar beside the conversation, a
// drawer on a phone. Each chat shows its title and what it is doing; one
// with calls waiting for the person says what waits, and the heading
// counts them all. A chat can be opened, renamed, or deleted after a
// confirmation. The list is read again after every turn, when the tab
// comes back to the front, and every 15 s while it is in front, so that
// what other tabs and devices do shows here.

import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { deleteChat, listChats, renameChat, waitingHere, waitingText } from './chats.js';
import { Confirm } from './Confirm.jsx';
import { PencilIcon, TrashIcon } from './icons.jsx';

const POLL_MS = 15_000;

/** The user's chats, read again when asked and now and then. */
export function useChatList(identity, device) {
  const [chats, setChats] = useState(null); // null until first read
  const [error, setError] = useState('');
  const reading = useRef(null);
  const refresh = useCallback(async () => {
    if (reading.current) return reading.current;
    reading.current = listChats(identity, device)
      .then((list) => {
        setChats(list);
        setError('');
      })
      .catch((err) => setError(err.message))
      .finally(() => {
        reading.current = null;
      });
    return reading.current;
  }, [identity, device]);
  useEffect(() => {
    refresh();
    const tick = setInterval(() => document.visibilityState === 'visible' && refresh(), POLL_MS);
    const onVisible = () => document.visibilityState === 'visible' && refresh();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(tick);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [refresh]);
  return { chats: chats ?? [], loaded: chats !== null, error, refresh };
}

/** What a chat is doing, in words. */
function stateText(c) {
  switch (c.state) {
    case 'waiting': return `Waiting for you: ${waitingText(c)}`;
    case 'running': return 'Working…';
    case 'live': return 'Live conversation';
    default: return '';
  }
}

export function Sidebar({ id, list, identity, current, isNew, open, onOpen, onNewChat, onClose, onDeleted, notify, footer }) {
  const [renaming, setRenaming] = useState(null); // { id, title } being renamed
  const [deleting, setDeleting] = useState(null); // the chat whose deletion is asked
  const headingId = useId();
  const total = waitingHere(list.chats);
  const nav = useRef(null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    if (!open) return undefined;
    nav.current?.querySelector('button')?.focus();
    // The drawer closes on Escape wherever the focus is (not while a
    // rename or a confirmation takes the key).
    const onKey = (e) => e.key === 'Escape' && !e.defaultPrevented && !document.querySelector('dialog[open]') && close.current();
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [open]);

  const rename = async (e) => {
    e.preventDefault();
    const { id: chatId, title } = renaming;
    setRenaming(null);
    try {
      await renameChat(identity, chatId, title.trim());
    } catch (err) {
      notify({ kind: 'error', text: `Could not rename the chat: ${err.message}` });
    }
    list.refresh();
  };
  const remove = async (confirmed) => {
    const c = deleting;
    setDeleting(null);
    if (!confirmed) return;
    try {
      await deleteChat(identity, c.id);
      onDeleted(c.id);
    } catch (err) {
      notify({ kind: 'error', text: `Could not delete the chat: ${err.message}` });
    }
    list.refresh();
  };

  const shown = isNew && !list.chats.some((c) => c.id === current)
    ? [{ id: current, title: '', state: 'idle', fresh: true }, ...list.chats] : list.chats;
  return (
    <>
      {open && <div className="backdrop" data-testid="drawer-backdrop" onClick={onClose} aria-hidden="true" />}
      <nav id={id} ref={nav} className="sidebar" data-testid="sidebar" data-open={open ? 'true' : 'false'} aria-labelledby={headingId}>
        <div className="sidebar-head">
          <h2 id={headingId}>Chats</h2>
          {total > 0 && <span className="count" data-testid="waiting-total" aria-label={`${total} waiting for you`}>{total}</span>}
          <button type="button" className="primary" data-testid="sidebar-new-chat" onClick={onNewChat}>New chat</button>
        </div>
        {list.error && <p className="sidebar-note" role="alert" data-testid="chats-error">Could not list your chats: {list.error}</p>}
        {list.loaded && list.chats.length === 0 && <p className="sidebar-note" data-testid="no-chats">No saved chats yet.</p>}
        <ul className="chat-list" data-testid="chat-list">
          {shown.map((c) => {
            const title = c.title || 'New chat';
            return (
              <li key={c.id} className="chat-item" data-testid="chat-item" data-chat-id={c.id} data-state={c.state}
                aria-current={c.id === current ? 'page' : undefined}>
                {renaming?.id === c.id ? (
                  <form className="rename" onSubmit={rename}>
                    <label htmlFor={`rename-${c.id}`} className="visually-hidden">New title of {title}</label>
                    <input id={`rename-${c.id}`} data-testid="rename-input" value={renaming.title} maxLength={80} required autoFocus
                      onChange={(e) => setRenaming({ id: c.id, title: e.target.value })}
                      onKeyDown={(e) => e.key === 'Escape' && (e.preventDefault(), setRenaming(null))} />
                    <button type="submit" data-testid="rename-save">Save</button>
                  </form>
                ) : (
                  <button type="button" className="chat-open" data-testid="chat-open" onClick={() => onOpen(c.id)}>
                    <span className="chat-title" data-testid="chat-title">{title}</span>
                    {stateText(c) && <span className="chat-state" data-testid="chat-state">{stateText(c)}</span>}
                  </button>
                )}
                {!c.fresh && renaming?.id !== c.id && (
                  <span className="chat-actions">
                    <button type="button" className="icon" data-testid="chat-rename" aria-label={`Rename ${title}`} title="Rename"
                      onClick={() => setRenaming({ id: c.id, title: c.title })}><PencilIcon /></button>
                    <button type="button" className="icon" data-testid="chat-delete" aria-label={`Delete ${title}`} title="Delete"
                      onClick={() => setDeleting(c)}><TrashIcon /></button>
                  </span>
                )}
              </li>
            );
          })}
        </ul>
        {footer && <div className="sidebar-foot">{footer}</div>}
      </nav>
      {deleting && (
        <Confirm title="Delete this chat?" testid="confirm-delete-chat" confirmLabel="Delete chat" onAnswer={remove}
          text={`“${deleting.title || 'New chat'}” and everything in it (its messages, files and anything it waits for) will be deleted. This cannot be undone.`} />
      )}
    </>
  );
}
