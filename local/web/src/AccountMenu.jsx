// The account's menu: download everything Baton keeps for the person (GET
// /Account/export, a ZIP), or delete all of it (DELETE /Account) after a
// confirmation.

import { useEffect, useId, useRef, useState } from 'react';
import { deleteData, downloadData } from './chats.js';
import { Confirm } from './Confirm.jsx';

export function AccountMenu({ identity, notify, onDeleted }) {
  const [open, setOpen] = useState(false);
  const [asking, setAsking] = useState(false);
  const [working, setWorking] = useState('');
  const menuId = useId();
  const box = useRef(null);
  useEffect(() => {
    if (!open) return undefined;
    const away = (e) => !box.current?.contains(e.target) && setOpen(false);
    document.addEventListener('pointerdown', away);
    return () => document.removeEventListener('pointerdown', away);
  }, [open]);

  const download = async () => {
    setOpen(false);
    setWorking('Preparing your data…');
    try {
      const name = await downloadData(identity);
      notify({ kind: 'info', text: `Your data was saved as ${name}.` });
    } catch (err) {
      notify({ kind: 'error', text: `Could not download your data: ${err.message}` });
    } finally {
      setWorking('');
    }
  };
  const erase = async (confirmed) => {
    setAsking(false);
    if (!confirmed) return;
    setWorking('Deleting your data…');
    try {
      const how = await deleteData(identity);
      notify({ kind: 'info', text: how === 'done' ? 'All your data was deleted.' : 'Your data is being deleted; it is already hidden.' });
      onDeleted();
    } catch (err) {
      notify({ kind: 'error', text: `Could not delete your data: ${err.message}` });
    } finally {
      setWorking('');
    }
  };

  return (
    <div className="account" ref={box} onKeyDown={(e) => {
      // Escape closes the menu first, and only the menu (not the drawer).
      if (e.key !== 'Escape' || !open) return;
      e.preventDefault();
      setOpen(false);
    }}>
      <button type="button" data-testid="account-menu" aria-expanded={open} aria-controls={menuId} disabled={!!working}
        onClick={() => setOpen((o) => !o)}>{working || 'My data'}</button>
      <ul id={menuId} className="account-menu" hidden={!open}>
        <li><button type="button" data-testid="download-data" onClick={download}>Download my data</button></li>
        <li><button type="button" className="danger" data-testid="delete-data" onClick={() => {
          setOpen(false);
          setAsking(true);
        }}>Delete my data</button></li>
      </ul>
      {asking && (
        <Confirm title="Delete all your data?" testid="confirm-delete-data" confirmLabel="Delete everything" onAnswer={erase}
          text="Every chat, message, file and rating Baton keeps for you will be deleted. This cannot be undone. You may download it first." />
      )}
    </div>
  );
}
