import './base.css';
import './render.css';
