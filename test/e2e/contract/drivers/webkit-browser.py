#!/usr/bin/python3
# A WebKitGTK browser for WebKitWebDriver whose website data (IndexedDB included) lives in a
# profile folder on disk, so it survives a relaunch. Stock MiniBrowser in automation mode keeps
# it in memory. Started by the driver as `webkit-browser.py --automation --profile=DIR`, with
# `--feature=NAME` for each WebKit feature to turn on beyond the port's defaults (WebKitGTK 2.50
# ships the origin private file system, `FileSystem`, off; Safari ships it on).
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("WebKit2", "4.1")
from gi.repository import Gtk, WebKit2  # noqa: E402

profile = next(arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--profile="))
features = [arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("--feature=")]
manager = WebKit2.WebsiteDataManager(
    base_data_directory=profile + "/data", base_cache_directory=profile + "/cache"
)
context = WebKit2.WebContext(website_data_manager=manager)
context.set_automation_allowed(True)
windows = []


def on_close(view, window):
    window.destroy()
    windows.remove(window)
    if not windows:
        Gtk.main_quit()


def create_web_view(_session):
    view = WebKit2.WebView(web_context=context, is_controlled_by_automation=True)
    if features:
        settings = view.get_settings()
        known = WebKit2.Settings.get_all_features()
        for i in range(known.get_length()):
            feature = known.get(i)
            if feature.get_identifier() in features:
                settings.set_feature_enabled(feature, True)
    window = Gtk.Window()
    window.set_default_size(1024, 768)
    window.add(view)
    window.show_all()
    windows.append(window)
    view.connect("close", on_close, window)
    return view


def on_automation_started(_context, session):
    info = WebKit2.ApplicationInfo()
    info.set_name("sessionline-contract")
    info.set_version(1, 0, 0)
    session.set_application_info(info)
    session.connect("create-web-view", create_web_view)


context.connect("automation-started", on_automation_started)
Gtk.main()
