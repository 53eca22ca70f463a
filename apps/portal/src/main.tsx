import { render } from 'preact';
import { App } from './app.js';
import { portalClient, takeToken } from './session.js';
import './style.css';

const token = takeToken(window.location, window.history);
render(<App client={token === null ? null : portalClient(token)} />, document.getElementById('app')!);
