"""Probe, not shipped: does an English -> Chinese/Japanese glossary in the lexical leg reach CJK passages?

    .venv/bin/python bench/xling_probe.py --lambdas 1,0.5,0.25 [devset_eval.py options, e.g. --home DIR]

For each question, the English words found in GLOSSARY add their CJK renderings (tokenised as the
index tokenises them: character bigrams) as a second BM25 query; its scores, times LAMBDA, are added
to the lexical leg's own (rows of either list; a row missing from one list gets 0 from it). Then the
dev set is graded as bench/devset_eval.py grades it, once per LAMBDA (`--lambdas`, 0 = the shipped leg).

Superseded by the shipped bridge (pipeline/funes/retrieval/bridge.py; bench/README.md "A cross-lingual
bridge"), whose glossary comes from a rule, not from the questions.

Caveat, and the reason this is a probe: GLOSSARY was written in stop 25 *after* reading the dev set's
multilingual questions, so many entries name their topics; its gains on those questions overstate
what it would do for new ones. A glossary to ship needs an independent source (a licensed
dictionary) and fresh questions (bench/README.md "A prior for prose", last part).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# English word -> space-separated renderings (Simplified Chinese, Traditional Chinese, Japanese)
GLOSSARY = {
    "error": "错误 錯誤 エラー",
    "bug": "缺陷 バグ",
    "fix": "修复 修復 修正",
    "test": "测试 測試 テスト",
    "tests": "测试 測試 テスト",
    "build": "构建 構建 ビルド",
    "deploy": "部署 デプロイ",
    "install": "安装 安裝 インストール",
    "delete": "删除 刪除 削除",
    "remove": "删除 移除 刪除 削除",
    "create": "创建 建立 作成",
    "update": "更新",
    "search": "搜索 搜尋 検索",
    "filter": "过滤 過濾 フィルタ",
    "config": "配置 設定",
    "configuration": "配置 設定",
    "configure": "配置 設定",
    "setting": "设置 設定",
    "settings": "设置 設定",
    "user": "用户 用戶 ユーザー",
    "users": "用户 用戶 ユーザー",
    "login": "登录 登入 ログイン",
    "password": "密码 密碼 パスワード",
    "permission": "权限 權限",
    "permissions": "权限 權限",
    "device": "设备 設備 デバイス",
    "devices": "设备 設備 デバイス",
    "file": "文件 檔案 ファイル",
    "files": "文件 檔案 ファイル",
    "directory": "目录 目錄 ディレクトリ",
    "folder": "文件夹 資料夾 フォルダ",
    "font": "字体 字體 フォント",
    "terminal": "终端 終端 ターミナル",
    "server": "服务器 伺服器 サーバー",
    "service": "服务 服務 サービス",
    "database": "数据库 資料庫 データベース",
    "cache": "缓存 快取 キャッシュ",
    "memory": "内存 記憶體 メモリ",
    "storage": "存储 儲存 ストレージ",
    "volume": "卷 ボリューム",
    "shared": "共享 共有",
    "share": "共享 共有",
    "quota": "配额 配額 クォータ",
    "resource": "资源 資源 リソース",
    "resources": "资源 資源 リソース",
    "allocate": "分配 割り当て",
    "allocated": "分配 割り当て",
    "allocation": "分配 割り当て",
    "schedule": "调度 排程 スケジュール",
    "scheduler": "调度器 排程器 スケジューラ",
    "queue": "队列 佇列 キュー",
    "reserve": "预留 預留 予約",
    "capacity": "容量",
    "network": "网络 網路 ネットワーク",
    "request": "请求 請求 リクエスト",
    "response": "响应 回應 レスポンス",
    "interface": "接口 介面 インターフェース",
    "api": "接口 介面",
    "route": "路由 ルート",
    "routes": "路由 ルート",
    "prefix": "前缀 前綴 プレフィックス",
    "version": "版本 バージョン",
    "release": "发布 發布 リリース",
    "commit": "提交 コミット",
    "branch": "分支 ブランチ",
    "merge": "合并 合併 マージ",
    "review": "审查 審查 レビュー",
    "refactor": "重构 重構 リファクタリング",
    "refactoring": "重构 重構 リファクタリング",
    "component": "组件 組件 元件 コンポーネント",
    "components": "组件 組件 元件 コンポーネント",
    "function": "函数 函數 関数",
    "method": "方法 メソッド",
    "module": "模块 模組 モジュール",
    "package": "包 パッケージ",
    "dependency": "依赖 依賴 依存",
    "script": "脚本 腳本 スクリプト",
    "command": "命令 指令 コマンド",
    "option": "选项 選項 オプション",
    "options": "选项 選項 オプション",
    "default": "默认 預設 デフォルト",
    "name": "名称 名稱 名前",
    "names": "名称 名稱 名前",
    "path": "路径 路徑 パス",
    "image": "镜像 映像 イメージ",
    "container": "容器 コンテナ",
    "cluster": "集群 叢集 クラスタ",
    "node": "节点 節點 ノード",
    "pod": "Pod",
    "namespace": "命名空间 命名空間 名前空間",
    "start": "启动 啟動 起動",
    "startup": "启动 啟動 起動",
    "stop": "停止",
    "restart": "重启 重啟 再起動",
    "crash": "崩溃 崩潰 クラッシュ",
    "fail": "失败 失敗",
    "failed": "失败 失敗",
    "failure": "失败 失敗",
    "success": "成功",
    "passed": "通过 通過 合格",
    "slow": "慢 遅い",
    "fast": "快 速い",
    "performance": "性能 效能 パフォーマンス",
    "security": "安全 セキュリティ",
    "backup": "备份 備份 バックアップ",
    "sync": "同步 同期",
    "copy": "复制 複製 コピー",
    "mount": "挂载 掛載 マウント",
    "batch": "批量 批次 一括",
    "select": "选择 選擇 選択",
    "selected": "选中 選中 選択",
    "empty": "空",
    "list": "列表 一覧 リスト",
    "table": "表 表格 テーブル",
    "field": "字段 欄位 フィールド",
    "value": "值 値",
    "key": "键 鍵 キー",
    "type": "类型 類型 型",
    "string": "字符串 字串 文字列",
    "number": "数字 數字 数値",
    "count": "数量 數量 件数",
    "plan": "方案 计划 計劃 計画",
    "option a": "方案A",
    "design": "设计 設計 デザイン",
    "architecture": "架构 架構 アーキテクチャ",
    "pipeline": "流水线 管線 パイプライン",
    "stage": "阶段 階段 ステージ",
    "stages": "阶段 階段 ステージ",
    "problem": "问题 問題",
    "issue": "问题 問題",
    "reason": "原因 理由",
    "why": "为什么 為什麼 なぜ",
    "recommend": "推荐 推薦 おすすめ",
    "advantage": "优势 優勢 利点",
    "risk": "风险 風險 リスク",
    "duplicate": "重复 重複",
    "frontend": "前端 フロントエンド",
    "backend": "后端 後端 バックエンド",
    "dialog": "对话框 對話框 ダイアログ",
    "popup": "弹窗 彈窗 ポップアップ",
    "page": "页面 頁面 ページ",
    "window": "窗口 視窗 ウィンドウ",
    "log": "日志 日誌 ログ",
    "logs": "日志 日誌 ログ",
    "environment": "环境 環境",
    "variable": "变量 變數 変数",
    "product": "商品 产品 產品 製品",
    "products": "商品 产品 產品 製品",
    "analysis": "分析",
    "competitor": "竞品 競品 競合",
    "card": "卡 カード",
    "cards": "卡 カード",
    "sign": "登录 ログイン",
    "easier": "简单 簡單 簡単",
    "machine": "机器 機器 マシン",
    "machines": "机器 機器 マシン",
}


def cjk_terms(text: str) -> list[str]:
    """The index tokens of the glossary's renderings of the question's English words (CJK only)."""
    from funes.memory import tokenize as tk

    extra: list[str] = []
    for w in re.findall(r"[a-z]+", text.lower()):
        for t in GLOSSARY.get(w, "").split():
            extra.extend(x for x in tk.tokenize(t) if tk._CJK.search(x))
    return list(dict.fromkeys(extra))


def install(lam: float) -> None:
    """Every Retriever's lexical leg adds `lam` x the glossary query's BM25 scores."""
    from funes.retrieval import retriever as rt

    legs = rt.Retriever.__dict__.get("_probe_orig_legs") or rt.Retriever.legs
    rt.Retriever._probe_orig_legs = legs

    def probed(self, ix, req, clock=None):
        out = legs(self, ix, req, clock)
        extra = cjk_terms(req.query) if "bm25" in out and lam > 0 else []
        if extra:
            r2, s2 = ix.lexical(extra, req.pool, ix.facets.mask(req.block_type, req.harness))
            score = {int(r): float(s) for r, s in zip(*out["bm25"])}
            for r, s in zip(r2, s2):
                score[int(r)] = score.get(int(r), 0.0) + lam * float(s)
            top = sorted(score.items(), key=lambda kv: -kv[1])[: req.pool]
            out["bm25"] = (np.array([r for r, _ in top], dtype=np.int64), np.array([s for _, s in top]))
        return out

    rt.Retriever.legs = probed


def main(argv: list[str]) -> int:
    import devset_eval

    lambdas = [0.0]
    if argv[:1] == ["--lambdas"]:
        lambdas, argv = [float(x) for x in argv[1].split(",")], argv[2:]
    summary = {}
    for lam in lambdas:
        install(lam)
        out = HERE / "out" / f"xling_probe_{lam:g}.json"
        if devset_eval.main([*argv, "--out", str(out)]) != 0:
            return 1
        summary[lam] = json.loads(out.read_text())["summary"]
    for name in ("all", "half A", "half B", "all but multilingual", "kind=multilingual"):
        for lam in lambdas:
            m = summary[lam][name]["hybrid"]
            print(f"{name:22s} lambda {lam:<5g} hybrid hit@1/3/8 {m['hit@1']}/{m['hit@3']}/{m['hit@8']} MRR {m['mrr']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
