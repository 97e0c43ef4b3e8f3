// The page's few icons, drawn inline (an emoji needs a font the device may
// not have). Each is decorative: its button carries the label.

const stroke = { fill: 'none', stroke: 'currentColor', strokeWidth: 1.4, strokeLinecap: 'round', strokeLinejoin: 'round' };

function Icon({ children }) {
  return <svg className="svg-icon" width="16" height="16" viewBox="0 0 16 16" aria-hidden="true" focusable="false">{children}</svg>;
}

export const PencilIcon = () => <Icon><path {...stroke} d="M2.5 13.5l.6-2.8L10.8 3l2.2 2.2-7.7 7.7zM9.4 4.4l2.2 2.2" /></Icon>;

export const TrashIcon = () => <Icon><path {...stroke} d="M2.5 4h11M6 4V2.5h4V4M4 4l.8 9.5h6.4L12 4M6.7 6.5v4.5M9.3 6.5v4.5" /></Icon>;

const thumb = 'M2 7.5h2.5V14H2zM4.5 7.5l3-5.2c1 0 1.7.8 1.5 1.9l-.5 2.6H13c.8 0 1.3.7 1.1 1.5l-1.2 4.6c-.2.6-.7 1.1-1.4 1.1H4.5';

export const ThumbUpIcon = () => <Icon><path {...stroke} d={thumb} /></Icon>;

export const ThumbDownIcon = () => <Icon><path {...stroke} d={thumb} transform="rotate(180 8 8)" /></Icon>;
